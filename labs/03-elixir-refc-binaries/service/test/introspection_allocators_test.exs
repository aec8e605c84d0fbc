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
    shared = :binary.copy(<<0>>, @size)
    other = :binary.copy(<<1>>, @size)
    [a, b, _c] = holders = [holder(shared), holder(shared), holder(other)]

    assert Introspection.binaries_referenced_by([a, b]) == @size
    assert Introspection.binaries_referenced_by(holders) == 2 * @size
  end

  defp holder(binary) do
    pid = spawn_link(fn -> hold(binary) end)
    sync(pid)
    pid
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
