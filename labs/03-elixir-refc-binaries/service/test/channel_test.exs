defmodule SocketApi.ChannelTest do
  use ExUnit.Case, async: true

  import ExUnit.CaptureLog

  alias SocketApi.Channel

  test "an unexpected message is logged and the channel carries on" do
    channel = start_supervised!({Channel, {"stray", self()}})
    stranger = spawn(fn -> :ok end)

    log =
      capture_log(fn ->
        send(channel, :unexpected)
        # A monitor message about some process other than the channel's connection.
        send(channel, {:DOWN, make_ref(), :process, stranger, :normal})
        # A call is served after the messages sent before it: the channel survived them.
        assert %{topic: "stray", connection: connection} = :sys.get_state(channel)
        assert connection == self()
      end)

    assert log =~ "channel stray ignored an unexpected message: :unexpected"
  end
end
