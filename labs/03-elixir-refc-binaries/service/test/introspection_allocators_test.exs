defmodule SocketApi.IntrospectionAllocatorsTest do
  # Not async: it reads figures of the whole node, which other tests would move.
  use ExUnit.Case, async: false

  alias SocketApi.Introspection

  @size 1_000_000

  test "each allocator's carriers hold at least its blocks, and RSS is read" do
    report = Introspection.allocators()

    assert map_size(report["per_allocator"]) > 0
    assert report["per_allocator"]["binary_alloc"]["carriers_bytes"] > 0

    for {name, alloc} <- report["per_allocator"], kind <- ["mbcs", "sbcs", "mbcs_pool"] do
      assert alloc[kind]["carriers_bytes"] >= alloc[kind]["blocks_bytes"], "#{name} #{kind}"
    end

    assert report["carriers_bytes"] >= report["blocks_bytes"]
    assert report["rss_bytes"] > 0
  end

  test "a binary two processes reference is counted once" do
    before = Introspection.allocators()["binary_referenced_by_processes_bytes"]
    shared = :binary.copy(<<0>>, @size)
    holders = for _ <- 1..2, do: spawn_link(fn -> hold(shared) end)
    Enum.each(holders, &sync/1)

    grown = Introspection.allocators()["binary_referenced_by_processes_bytes"] - before

    # This test process references it too: three holders, one binary.
    assert grown >= @size and grown < 2 * @size
  end

  defp hold(binary) do
    receive do
      {:sync, from} ->
        send(from, {:synced, self(), byte_size(binary)})
        hold(binary)
    end
  end

  defp sync(pid) do
    send(pid, {:sync, self()})
    assert_receive {:synced, ^pid, @size}
  end
end
