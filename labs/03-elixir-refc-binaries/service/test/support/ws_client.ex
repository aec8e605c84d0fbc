defmodule SocketApi.WsClient do
  @moduledoc """
  A minimal WebSocket client for the tests: raw `:gen_tcp` plus `:cow_ws` for the
  client side of framing (masked frames out, unmasked frames in), so that a test can
  also send what a real client library never would.
  """

  @timeout 5_000

  def connect(port) do
    {:ok, socket} = :gen_tcp.connect({127, 0, 0, 1}, port, [:binary, active: false])
    key = Base.encode64(:crypto.strong_rand_bytes(16))

    :ok =
      :gen_tcp.send(socket, [
        "GET /socket HTTP/1.1\r\nhost: localhost\r\nupgrade: websocket\r\n",
        "connection: Upgrade\r\nsec-websocket-version: 13\r\n",
        "sec-websocket-key: #{key}\r\n\r\n"
      ])

    {:ok, head, rest} = read_head(socket, <<>>)
    {socket, head, key, rest}
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

  defp read_all(socket, acc) do
    case :gen_tcp.recv(socket, 0, @timeout) do
      {:ok, data} -> read_all(socket, acc <> data)
      {:error, :closed} -> acc
    end
  end
end
