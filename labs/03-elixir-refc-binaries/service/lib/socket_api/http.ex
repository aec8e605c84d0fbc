defmodule SocketApi.HTTP do
  @moduledoc """
  Just enough HTTP/1.1 for one request per connection: read the request head, parse
  it line by line with the runtime's own HTTP parser (`:erlang.decode_packet/3`), and
  write a plain response.

  Every socket starts here. A WebSocket upgrade continues as a `SocketApi.Connection`
  in WebSocket mode; anything else (`/healthz`, `/metrics`, `/debug/...`) gets one
  response and the socket is closed.
  """

  # The longest request line or header line accepted (Cowboy's default request-line
  # limit is 8,000 bytes), and how many header lines.
  @max_line_bytes 8_192
  @max_headers 64

  # After refusing a head, how long to go on reading (and dropping) what the client
  # still sends before closing (Cowboy's `linger_timeout` is the same idea).
  @linger_ms 1_000

  @type request :: %{
          method: atom() | binary(),
          path: binary(),
          query: binary(),
          headers: map(),
          rest: binary()
        }

  @type error ::
          :uri_too_long | :header_too_large | {:bad_request, term()} | :closed | :inet.posix()

  @doc """
  Reads one request head, all of it within `timeout` ms. Headers are keyed by
  lower-case name; `rest` holds what the client sent after the head (a WebSocket
  client may send its first frames without waiting for the 101).

  The socket stays in raw mode and each line is parsed from the bytes received so
  far. The socket's own `packet: :http_bin` mode would parse too, but a line longer
  than the socket's buffer (about 1.4 KB by default) makes the driver fail with
  `:emsgsize` and close the socket, so no answer could be sent. Here a line over
  #{@max_line_bytes} bytes is an error the caller answers: `:uri_too_long` (414) for
  the request line, `:header_too_large` (431) for a header line or too many headers.
  """
  @spec read_request(:gen_tcp.socket(), timeout()) :: {:ok, request()} | {:error, error()}
  def read_request(socket, timeout) do
    deadline = System.monotonic_time(:millisecond) + timeout

    with {:ok, {:http_request, method, {:abs_path, target}, _version}, rest} <-
           read_line(socket, :http_bin, <<>>, deadline, :uri_too_long),
         {:ok, headers, rest} <- read_headers(socket, rest, deadline, %{}, 0) do
      {path, query} = split_target(target)
      {:ok, %{method: method, path: path, query: query, headers: headers, rest: rest}}
    else
      {:ok, other, _rest} -> {:error, {:bad_request, other}}
      {:error, _} = error -> error
    end
  end

  defp read_headers(_socket, _buffer, _deadline, _acc, count) when count > @max_headers,
    do: {:error, :header_too_large}

  defp read_headers(socket, buffer, deadline, acc, count) do
    case read_line(socket, :httph_bin, buffer, deadline, :header_too_large) do
      {:ok, {:http_header, _, name, _, value}, rest} ->
        key = name |> to_string() |> String.downcase()
        read_headers(socket, rest, deadline, Map.put(acc, key, value), count + 1)

      {:ok, :http_eoh, rest} ->
        {:ok, acc, rest}

      {:ok, other, _rest} ->
        {:error, {:bad_header, other}}

      {:error, _} = error ->
        error
    end
  end

  # The next line of the head, parsed; receives more bytes until a whole line is in.
  defp read_line(socket, type, buffer, deadline, too_long) do
    case :erlang.decode_packet(type, buffer, packet_size: @max_line_bytes) do
      {:ok, packet, rest} ->
        {:ok, packet, rest}

      {:more, _} ->
        with {:ok, data} <- recv(socket, deadline),
             do: read_line(socket, type, buffer <> data, deadline, too_long)

      # The parser's only error for HTTP lines: more than `packet_size` bytes without
      # a line end (a malformed line is `{:http_error, line}` instead).
      {:error, :invalid} ->
        {:error, too_long}
    end
  end

  defp recv(socket, deadline),
    do: :gen_tcp.recv(socket, 0, max(deadline - System.monotonic_time(:millisecond), 0))

  defp split_target(target) do
    case String.split(target, "?", parts: 2) do
      [path, query] -> {path, query}
      [path] -> {path, ""}
    end
  end

  @doc "A complete response that closes the connection."
  @spec response(pos_integer(), binary(), iodata()) :: iodata()
  def response(status, content_type, body) do
    [
      "HTTP/1.1 #{status} #{reason(status)}\r\n",
      "content-type: #{content_type}\r\n",
      "content-length: #{IO.iodata_length(body)}\r\n",
      "connection: close\r\n\r\n",
      body
    ]
  end

  @doc """
  Closes a socket whose request was refused before all of it was read, without
  destroying the response just sent: closing with unread input makes the TCP stack
  send a reset, and a client that is still sending may then lose the response. So
  half-close (the client sees the end of the response), read and drop whatever it
  still sends, for at most #{@linger_ms} ms, then close.
  """
  @spec linger_close(:gen_tcp.socket()) :: :ok
  def linger_close(socket) do
    :gen_tcp.shutdown(socket, :write)
    drain(socket, System.monotonic_time(:millisecond) + @linger_ms)
    :gen_tcp.close(socket)
  end

  defp drain(socket, deadline) do
    case recv(socket, deadline) do
      {:ok, _dropped} -> drain(socket, deadline)
      {:error, _closed_or_timeout} -> :ok
    end
  end

  defp reason(200), do: "OK"
  defp reason(400), do: "Bad Request"
  defp reason(404), do: "Not Found"
  defp reason(405), do: "Method Not Allowed"
  defp reason(414), do: "URI Too Long"
  defp reason(431), do: "Request Header Fields Too Large"
  defp reason(_), do: "Error"
end
