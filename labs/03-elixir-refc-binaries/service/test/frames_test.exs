defmodule SocketApi.FramesTest do
  use ExUnit.Case, async: true

  alias SocketApi.Frames

  @max 1_024

  defp masked(frame), do: IO.iodata_to_binary(:cow_ws.masked_frame(frame, %{}))

  test "a text frame split across two reads comes out whole, once" do
    bytes = masked({:text, "hello"})
    <<first::binary-size(3), second::binary>> = bytes

    assert {:ok, [], frames} = Frames.feed(Frames.new(@max), first)
    assert {:ok, [{:text, "hello"}], _} = Frames.feed(frames, second)
  end

  test "fragments are reassembled, with a ping answered in between" do
    bytes =
      <<0::1, 0::3, 1::4, 1::1, 3::7, 0::32, "abc">> <>
        masked({:ping, "p"}) <> <<1::1, 0::3, 0::4, 1::1, 3::7, 0::32, "def">>

    assert {:ok, [{:ping, "p"}, {:text, "abcdef"}], _} = Frames.feed(Frames.new(@max), bytes)
  end

  test "a text frame from iodata is the frame cowlib makes of the same bytes, at every length size" do
    for size <- [0, 125, 126, 65_535, 65_536] do
      payload = ["{", String.duplicate("x", max(size - 2, 0)), "}"] |> IO.iodata_to_binary()
      payload = binary_part(payload, 0, size)

      parts = [
        binary_part(payload, 0, div(size, 2)),
        binary_part(payload, div(size, 2), size - div(size, 2))
      ]

      assert IO.iodata_to_binary(Frames.text(parts)) ==
               IO.iodata_to_binary(:cow_ws.frame({:text, payload}, %{}))
    end
  end

  test "an unmasked client frame is a protocol error (1002)" do
    assert {:error, 1002} = Frames.feed(Frames.new(@max), IO.iodata_to_binary(Frames.text("x")))
  end

  test "reserved bits without an extension are a protocol error (1002)" do
    assert {:error, 1002} =
             Frames.feed(Frames.new(@max), <<1::1, 1::3, 1::4, 1::1, 1::7, 0::32, "x">>)
  end

  test "a frame declared larger than the limit is refused before its payload (1009)" do
    header = <<1::1, 0::3, 2::4, 1::1, 127::7, 1_000_000::64, 0::32>>
    assert {:error, 1009} = Frames.feed(Frames.new(@max), header)
  end

  test "fragments adding up to more than the limit are too big (1009)" do
    part = <<0::1, 0::3, 2::4, 1::1, 126::7, 600::16, 0::32, :binary.copy(<<0>>, 600)::binary>>
    more = <<0::1, 0::3, 0::4, 1::1, 126::7, 600::16, 0::32, :binary.copy(<<0>>, 600)::binary>>
    assert {:error, 1009} = Frames.feed(Frames.new(@max), part <> more)
  end

  test "text that is not UTF-8 is refused (1007)" do
    assert {:error, 1007} = Frames.feed(Frames.new(@max), masked({:text, <<0xFF, 0xFE>>}))
  end

  test "a close frame carries its code" do
    assert {:ok, [{:close, 1000, "bye"}], _} =
             Frames.feed(Frames.new(@max), masked({:close, 1000, "bye"}))
  end
end
