defmodule SocketApi.ChannelTest do
  # Not async: finds its channel among the running application's.
  use ExUnit.Case

  import ExUnit.CaptureLog

  alias SocketApi.WsClient

  test "an unexpected message is logged and the channel carries on" do
    before = channels()
    ws = WsClient.open(SocketApi.Listener.port())
    WsClient.send_json(ws, %{type: "join", ref: "1", topic: "stray"})
    assert {%{"type" => "joined"}, ws} = WsClient.recv_json(ws)
    [channel] = channels() -- before
    stranger = spawn(fn -> :ok end)

    log =
      capture_log(fn ->
        send(channel, :unexpected)
        # A monitor message about a process other than the channel's connection.
        send(channel, {:DOWN, make_ref(), :process, stranger, :normal})
        # Served after the two messages above (same sender): fails if they killed it.
        :sys.get_state(channel)
      end)

    assert log =~ "channel stray ignored an unexpected message: :unexpected"

    WsClient.send_json(ws, %{type: "request", ref: "2", topic: "stray", op: "list_items"})
    assert {%{"type" => "reply", "ref" => "2"}, _} = WsClient.recv_json(ws)
  end

  test "an idle channel hibernates after :channel_hibernate_after_ms, as a Phoenix channel does" do
    previous = Application.fetch_env!(:socket_api, :channel_hibernate_after_ms)
    Application.put_env(:socket_api, :channel_hibernate_after_ms, 200)
    on_exit(fn -> Application.put_env(:socket_api, :channel_hibernate_after_ms, previous) end)

    before = channels()
    ws = WsClient.open(SocketApi.Listener.port())
    WsClient.send_json(ws, %{type: "join", ref: "1", topic: "idle"})
    assert {%{"type" => "joined"}, ws} = WsClient.recv_json(ws)
    [channel] = channels() -- before
    WsClient.send_json(ws, %{type: "request", ref: "2", topic: "idle", op: "list_items"})
    assert {%{"type" => "reply", "ref" => "2"}, _} = WsClient.recv_json(ws)

    assert eventually(fn ->
             Process.info(channel, :current_function) ==
               {:current_function, {:erlang, :hibernate, 3}}
           end)
  end

  defp eventually(check, tries \\ 50) do
    cond do
      check.() -> true
      tries == 0 -> false
      true -> Process.sleep(20) && eventually(check, tries - 1)
    end
  end

  defp channels do
    for {_, pid, _, _} <- DynamicSupervisor.which_children(SocketApi.ChannelSupervisor),
        do: pid
  end
end
