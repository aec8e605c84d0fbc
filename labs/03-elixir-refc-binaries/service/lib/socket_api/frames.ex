defmodule SocketApi.Frames do
  @moduledoc """
  Turns the bytes of a WebSocket stream into whole messages, and messages into frames.

  `:cow_ws` (cowlib, the protocol code under Cowboy) parses each frame header and
  unmasks and validates each payload; this module adds what a connection needs around
  it: buffering partial frames, reassembling fragmented messages, and a size limit
  that is checked against the declared length, before any payload is buffered.

  Errors come back as the close code to send: 1002 (protocol error), 1007 (text that
  is not UTF-8), 1009 (message too big).
  """

  defstruct buffer: <<>>, frag_state: :undefined, fragments: [], frag_size: 0, utf8: 0, max: 0

  @type t :: %__MODULE__{}
  @type event ::
          {:text, binary()}
          | {:binary, binary()}
          | {:ping, binary()}
          | {:pong, binary()}
          | {:close, non_neg_integer(), binary()}

  @no_extensions %{}

  @spec new(pos_integer()) :: t()
  def new(max_message_bytes), do: %__MODULE__{max: max_message_bytes}

  @doc "Feeds received bytes; returns the complete events in order, or a close code."
  @spec feed(t(), binary()) :: {:ok, [event()], t()} | {:error, 1002 | 1007 | 1009}
  def feed(%__MODULE__{} = state, data), do: parse(%{state | buffer: state.buffer <> data}, [])

  defp parse(state, events) do
    case :cow_ws.parse_header(state.buffer, @no_extensions, state.frag_state) do
      :more ->
        {:ok, Enum.reverse(events), state}

      :error ->
        {:error, 1002}

      {_type, _frag, _rsv, _len, :undefined, _rest} ->
        # RFC 6455 5.1: every frame from a client is masked.
        {:error, 1002}

      {_type, _frag, _rsv, len, _mask, _rest} when len + state.frag_size > state.max ->
        {:error, 1009}

      {_type, _frag, _rsv, len, _mask, rest} when byte_size(rest) < len ->
        {:ok, Enum.reverse(events), state}

      {type, frag_state, rsv, len, mask, rest} ->
        payload(state, events, {type, frag_state, rsv, len, mask, rest})
    end
  end

  defp payload(state, events, {type, frag_state, rsv, len, mask, rest}) do
    control? = type in [:close, :ping, :pong]
    utf8 = if control?, do: 0, else: state.utf8

    case :cow_ws.parse_payload(rest, mask, utf8, 0, type, len, frag_state, @no_extensions, rsv) do
      {:ok, data, utf8, rest} ->
        frame = :cow_ws.make_frame(type, data, :undefined, frag_state)
        state = if control?, do: state, else: %{state | utf8: utf8}
        collect(%{state | buffer: rest}, events, frame, frag_state)

      {:ok, code, data, _utf8, rest} ->
        parse(%{state | buffer: rest}, [{:close, code, data} | events])

      {:error, :badencoding} ->
        {:error, 1007}

      _ ->
        {:error, 1002}
    end
  end

  # A fragment is kept until its message's last fragment arrives; a control frame may
  # come between two fragments (RFC 6455 5.4) and does not disturb the reassembly.
  defp collect(state, events, {:fragment, :nofin, _type, data}, frag_state) do
    parse(
      %{
        state
        | frag_state: frag_state,
          fragments: [data | state.fragments],
          frag_size: state.frag_size + byte_size(data)
      },
      events
    )
  end

  defp collect(state, events, {:fragment, :fin, type, data}, _frag_state) do
    message = IO.iodata_to_binary(Enum.reverse([data | state.fragments]))
    state = %{state | frag_state: :undefined, fragments: [], frag_size: 0, utf8: 0}
    parse(state, [{type, message} | events])
  end

  defp collect(state, events, frame, _frag_state) do
    state = if elem_type(frame) in [:text, :binary], do: %{state | utf8: 0}, else: state
    parse(state, [normalize(frame) | events])
  end

  defp elem_type(frame) when is_atom(frame), do: frame
  defp elem_type(frame), do: elem(frame, 0)

  defp normalize(:ping), do: {:ping, <<>>}
  defp normalize(:pong), do: {:pong, <<>>}
  defp normalize(:close), do: {:close, 1005, <<>>}
  defp normalize(frame), do: frame

  @doc """
  A server text frame (servers never mask): a header, then the payload as it was given.

  Cowboy writes a reply's iodata to the socket without joining it; cowlib 1.3's
  `:cow_ws.frame/2` (Debian's) wants one binary, so the header is written here (RFC 6455,
  5.2: FIN and opcode 1, then the length in 7, 7+16 or 7+64 bits).
  """
  @spec text(iodata()) :: iodata()
  def text(payload), do: [text_header(IO.iodata_length(payload)), payload]

  defp text_header(len) when len < 126, do: <<1::1, 0::3, 1::4, 0::1, len::7>>
  defp text_header(len) when len < 65_536, do: <<1::1, 0::3, 1::4, 0::1, 126::7, len::16>>
  defp text_header(len), do: <<1::1, 0::3, 1::4, 0::1, 127::7, len::64>>

  @spec pong(binary()) :: iodata()
  def pong(payload), do: :cow_ws.frame({:pong, payload}, @no_extensions)

  @spec close(non_neg_integer(), binary()) :: iodata()
  def close(code, reason \\ <<>>), do: :cow_ws.frame({:close, code, reason}, @no_extensions)
end
