defmodule SocketApi.DiagnosticsTest do
  # Async: the tests look only at processes they start themselves. Collecting every
  # process on the node (bin_leak) would hide the garbage that a test measuring the
  # node's memory is looking for, but such tests are not async, and ExUnit starts the
  # modules that are not async only once every async one has finished.
  use ExUnit.Case, async: true

  alias SocketApi.{Diagnostics, WsClient}

  # Over 64 bytes, so a reference-counted binary outside the process heaps, and small
  # enough that one arriving does not by itself set off a collection in the receiver:
  # the test decides when each process is collected.
  @size 100_000

  describe "bin_leak/1" do
    test "ranks a process by the binary it no longer references after a collection" do
      idle = spawn_link(fn -> drop_what_arrives() end)
      keeper = spawn_link(fn -> keep_what_arrives(nil) end)
      send(idle, {:take, fresh_binary()})
      send(keeper, {:take, fresh_binary()})
      sync(idle)
      sync(keeper)
      assert binary_bytes(idle) == @size, "the idle process holds its garbage"

      rows = Diagnostics.bin_leak(100_000)

      assert %{released_bytes: @size, released_refs: 1} = row(rows, idle)
      assert %{released_bytes: 0, released_refs: 0} = row(rows, keeper)
      assert binary_bytes(idle) == 0
      assert binary_bytes(keeper) == @size
      assert rows == Enum.sort_by(rows, &{&1.released_bytes, &1.released_refs}, :desc)
    end

    test "rows say what the runtime knows: registered name or initial call, and current function" do
      plain = spawn_link(fn -> drop_what_arrives() end)
      sync(plain)
      {:ok, agent} = Agent.start_link(fn -> nil end)
      rows = Diagnostics.bin_leak(100_000)

      # A process spawned with a fun starts in :erlang.apply/2. One started through
      # :proc_lib is named by the function recorded for it: a GenServer's init/1, or
      # for an Agent the function it was given.
      assert %{name: {:erlang, :apply, 2}, current_function: {__MODULE__, :drop_what_arrives, 0}} =
               row(rows, plain)

      assert %{name: {__MODULE__, _, 0}, current_function: {:gen_server, :loop, 7}} =
               row(rows, agent)

      assert %{name: SocketApi.Supervisor} = row(rows, Process.whereis(SocketApi.Supervisor))
      assert [_, _, _] = Diagnostics.bin_leak(3)
    end
  end

  describe "top/2" do
    test "ranks by binary memory, largest first" do
      keeper = spawn_link(fn -> keep_what_arrives(nil) end)
      send(keeper, {:take, :binary.copy(<<1>>, 50 * @size)})
      sync(keeper)
      rows = Diagnostics.top(:binary_memory, 100_000)

      assert %{value: value} = row(rows, keeper)
      assert value >= 50 * @size
      assert Enum.map(rows, & &1.value) == Enum.sort(Enum.map(rows, & &1.value), :desc)
    end

    test "ranks by reductions, message queue and memory" do
      for attribute <- [:reductions, :message_queue_len, :memory] do
        assert [%{pid: pid, value: value} | _] = rows = Diagnostics.top(attribute, 5)
        assert is_pid(pid) and is_integer(value)
        assert length(rows) == 5
      end
    end
  end

  describe "over HTTP" do
    test "GET /debug/top and POST /debug/bin_leak answer JSON rows without labels" do
      port = SocketApi.Listener.port()
      {200, body} = WsClient.http(port, "GET /debug/top?by=reductions&top=3 HTTP/1.1")
      assert %{"by" => "reductions", "processes" => [row | _] = rows} = decode(body)
      assert length(rows) == 3
      assert Map.keys(row) == ["current_function", "name", "pid", "value"]

      {200, body} = WsClient.http(port, "POST /debug/bin_leak?top=2 HTTP/1.1")

      assert %{"processes" => [_, _], "by_name" => [_ | _], "memory_before" => %{"binary" => _}} =
               decode(body)

      assert {400, _} = WsClient.http(port, "GET /debug/top?by=channel HTTP/1.1")
      assert {405, _} = WsClient.http(port, "GET /debug/bin_leak HTTP/1.1")
    end
  end

  defp decode(body), do: :jiffy.decode(body, [:return_maps])

  defp row(rows, pid), do: Enum.find(rows, &(&1.pid == pid))

  # A binary made at run time: a literal would live in the module's literal area.
  defp fresh_binary, do: :binary.copy(<<0>>, @size)

  # Lets go of each binary it receives: garbage on its heap until it collects.
  defp drop_what_arrives do
    receive do
      {:take, _binary} ->
        drop_what_arrives()

      {:sync, from} ->
        send(from, :synced)
        drop_what_arrives()
    end
  end

  # Keeps the last binary it received: live data, which no collection frees.
  defp keep_what_arrives(kept) do
    receive do
      {:take, binary} ->
        keep_what_arrives(binary)

      {:sync, from} ->
        send(from, :synced)
        keep_what_arrives(kept)
    end
  end

  # Returns once `pid` has handled every message sent to it before.
  defp sync(pid) do
    send(pid, {:sync, self()})
    assert_receive :synced
  end

  defp binary_bytes(pid) do
    {:binary, binaries} = Process.info(pid, :binary)
    binaries |> Enum.map(&elem(&1, 1)) |> Enum.sum()
  end
end
