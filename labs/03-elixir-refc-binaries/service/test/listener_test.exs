defmodule SocketApi.ListenerTest do
  # Not async: these tests use the running application's listener and connections.
  use ExUnit.Case

  alias SocketApi.{Acceptor, Listener, WsClient}

  test "the acceptors are supervised: one that dies is replaced, and accepting goes on" do
    acceptors = Supervisor.which_children(Listener)
    assert length(acceptors) == Application.fetch_env!(:socket_api, :acceptors)
    [{id, pid, :worker, [Acceptor]} | _] = acceptors

    ref = Process.monitor(pid)
    Process.exit(pid, :kill)
    assert_receive {:DOWN, ^ref, :process, ^pid, :killed}

    assert eventually(fn ->
             Enum.any?(Supervisor.which_children(Listener), fn {child, new, _, _} ->
               child == id and is_pid(new) and new != pid
             end)
           end)

    for _ <- 1..8,
        do: assert({200, "ok\n"} = WsClient.http(Listener.port(), "GET /healthz HTTP/1.1"))
  end

  test "a socket that cannot be handed over leaves no Connection behind" do
    {:ok, listen} = :gen_tcp.listen(0, [:binary, active: false, ip: {127, 0, 0, 1}])
    {:ok, port} = :inet.port(listen)
    {:ok, client} = :gen_tcp.connect({127, 0, 0, 1}, port, [:binary, active: false])
    {:ok, socket} = :gen_tcp.accept(listen)

    # The hand-over needs the caller to own the socket; make someone else its owner.
    owner = spawn(fn -> Process.sleep(:infinity) end)
    :ok = :gen_tcp.controlling_process(socket, owner)
    before = connections()

    assert {:error, :not_owner} = Acceptor.hand_over(socket)
    assert eventually(fn -> connections() -- before == [] end)
    # And the socket was closed, so the client is not left waiting either.
    assert {:error, :closed} = :gen_tcp.recv(client, 0, 1_000)
  end

  test "a client that stops reading is disconnected, not waited for" do
    before = connections()
    client = WsClient.open(Listener.port())
    assert eventually(fn -> length(connections() -- before) == 1 end)
    [conn] = connections() -- before
    ref = Process.monitor(conn)

    # Replies the client never reads, pushed as a channel pushes them: 64 MB, more than
    # the kernel buffers on both ends hold, so the connection's send stalls; the send
    # timeout (500 ms in test) closes the socket, and the connection ends instead of
    # staying blocked with its payloads.
    reply = %{type: "reply", ref: "2", topic: "t", status: "ok", items: [filler()]}
    payload = :jiffy.encode(reply)
    for _ <- 1..64, do: send(conn, {:socket_push, :text, payload})

    assert_receive {:DOWN, ^ref, :process, ^conn, _reason}, 20_000
    assert {:error, :closed} = drain(client.socket)
  end

  defp filler, do: String.duplicate("x", 1_000_000)

  defp drain(socket) do
    case :gen_tcp.recv(socket, 0, 5_000) do
      {:ok, _} -> drain(socket)
      other -> other
    end
  end

  defp connections do
    for {_, pid, _, _} <- DynamicSupervisor.which_children(SocketApi.ConnectionSupervisor),
        do: pid
  end

  defp eventually(check, tries \\ 50) do
    cond do
      check.() -> true
      tries == 0 -> false
      true -> Process.sleep(20) && eventually(check, tries - 1)
    end
  end
end
