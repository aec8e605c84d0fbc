defmodule SocketApi.WsClient do
  @moduledoc """
  A minimal WebSocket client for the tests: raw `:gen_tcp` plus `:cow_ws` for the
  client side of framing (masked frames out, unmasked frames in), so that a test can
  also send what a real client library never would.
  """

  @timeout 5_000

  @doc """
  Sends an upgrade request, and `early` bytes right behind it; returns the socket, the
  response head, the key sent and whatever followed the head.
  """
  def connect(port, early \\ []) do
    {:ok, socket} = :gen_tcp.connect({127, 0, 0, 1}, port, [:binary, active: false])
    key = Base.encode64(:crypto.strong_rand_bytes(16))
    :ok = :gen_tcp.send(socket, [upgrade_head(key), early])
    {:ok, head, rest} = read_head(socket, <<>>)
    {socket, head, key, rest}
  end

  @doc "The head of a WebSocket upgrade request with the given `sec-websocket-key`."
  def upgrade_head(key) do
    [
      "GET /socket HTTP/1.1\r\nhost: localhost\r\nupgrade: websocket\r\n",
      "connection: Upgrade\r\nsec-websocket-version: 13\r\n",
      "sec-websocket-key: #{key}\r\n\r\n"
    ]
  end

  defp read_head(socket, acc) do
    case :binary.split(acc, "\r\n\r\n") do
      [head, rest] ->
        {:ok, head, rest}

      [_] ->
        {:ok, data} = :gen_tcp.recv(socket, 0, @timeout)
        read_head(socket, acc <> data)
    end
  end

  @doc "Connects and checks the 101; returns a client state for send/recv."
  def open(port) do
    {socket, "HTTP/1.1 101 " <> _, _key, rest} = connect(port)
    %{socket: socket, buffer: rest}
  end

  def send_frame(%{socket: socket}, frame),
    do: :gen_tcp.send(socket, :cow_ws.masked_frame(frame, %{}))

  def send_raw(%{socket: socket}, bytes), do: :gen_tcp.send(socket, bytes)

  def send_json(client, doc), do: send_frame(client, {:text, :jiffy.encode(doc)})

  @doc "The next JSON message from the server (ignoring nothing)."
  def recv_json(client) do
    {{:text, text}, client} = recv_frame(client)
    {:jiffy.decode(text, [:return_maps]), client}
  end

  @doc "The next whole frame from the server, as `{frame, client}`; `:closed` at EOF."
  def recv_frame(%{socket: socket, buffer: buffer} = client) do
    case :cow_ws.parse_header(buffer, %{}, :undefined) do
      {type, frag, rsv, len, mask, rest} when byte_size(rest) >= len ->
        case :cow_ws.parse_payload(rest, mask, 0, 0, type, len, frag, %{}, rsv) do
          {:ok, code, payload, _, rest} -> {{:close, code, payload}, %{client | buffer: rest}}
          {:ok, payload, _, rest} -> {{type, payload}, %{client | buffer: rest}}
        end

      _more ->
        case :gen_tcp.recv(socket, 0, @timeout) do
          {:ok, data} -> recv_frame(%{client | buffer: buffer <> data})
          {:error, :closed} -> {:closed, client}
        end
    end
  end

  @doc "Reads frames until the server closes; returns the close frame it sent, if any."
  def await_close(client) do
    case recv_frame(client) do
      {{:close, code, _}, client} -> {code, recv_frame(client) |> elem(0)}
      {:closed, _} -> {nil, :closed}
      {_other, client} -> await_close(client)
    end
  end

  @doc "A one-shot HTTP request; returns `{status, body}`."
  def http(port, request_line) do
    {:ok, socket} = :gen_tcp.connect({127, 0, 0, 1}, port, [:binary, active: false])
    :ok = :gen_tcp.send(socket, [request_line, "\r\nhost: localhost\r\n\r\n"])
    response = read_all(socket, <<>>)
    [head, body] = :binary.split(response, "\r\n\r\n")
    ["HTTP/1.1", status | _] = String.split(head, " ", parts: 3)
    {String.to_integer(status), body}
  end

  @doc """
  Sends `bytes` as they are and reads the reply to the end. Returns `{status, body, ended}`
  where `ended` is how the server ended it: `:closed` for an orderly close, `:econnreset`
  for a reset (which, on some systems, destroys a reply not yet read).
  """
  def raw_http(port, bytes) do
    opts = [:binary, active: false, show_econnreset: true]
    {:ok, socket} = :gen_tcp.connect({127, 0, 0, 1}, port, opts)
    :ok = :gen_tcp.send(socket, bytes)
    {response, ended} = read_to_end(socket, <<>>)
    :gen_tcp.close(socket)

    case :binary.split(response, "\r\n\r\n") do
      ["HTTP/1.1 " <> <<status::binary-size(3)>> <> _, body] ->
        {String.to_integer(status), body, ended}

      _ ->
        {:no_response, response, ended}
    end
  end

  defp read_to_end(socket, acc) do
    case :gen_tcp.recv(socket, 0, @timeout) do
      {:ok, data} -> read_to_end(socket, acc <> data)
      {:error, reason} -> {acc, reason}
    end
  end

  defp read_all(socket, acc) do
    case :gen_tcp.recv(socket, 0, @timeout) do
      {:ok, data} -> read_all(socket, acc <> data)
      {:error, :closed} -> acc
    end
  end
end
