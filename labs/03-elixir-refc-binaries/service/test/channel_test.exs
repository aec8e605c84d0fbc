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

  defp channels do
    for {_, pid, _, _} <- DynamicSupervisor.which_children(SocketApi.ChannelSupervisor),
        do: pid
  end
end
