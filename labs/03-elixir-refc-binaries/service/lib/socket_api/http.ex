defmodule SocketApi.HTTP do
  @moduledoc """
  Just enough HTTP/1.1 for one request per connection: read the request head with
  the socket's built-in `:http_bin` packet parser, and write a plain response.

  Every socket starts here. A WebSocket upgrade continues as a `SocketApi.Connection`
  in WebSocket mode; anything else (`/healthz`, `/metrics`, `/debug/...`) gets one
  response and the socket is closed.
  """

  @max_headers 64

  @type request :: %{method: atom() | binary(), path: binary(), query: binary(), headers: map()}

  @doc "Reads one request head; headers are keyed by lower-case name."
  @spec read_request(:gen_tcp.socket(), timeout()) :: {:ok, request()} | {:error, term()}
  def read_request(socket, timeout) do
    :ok = :inet.setopts(socket, packet: :http_bin)

    result =
      with {:ok, {:http_request, method, {:abs_path, target}, _version}} <-
             :gen_tcp.recv(socket, 0, timeout),
           {:ok, headers} <- read_headers(socket, timeout, %{}, 0) do
        {path, query} = split_target(target)
        {:ok, %{method: method, path: path, query: query, headers: headers}}
      else
        {:ok, other} -> {:error, {:bad_request, other}}
        {:error, _} = error -> error
      end

    # Whatever follows the head (WebSocket frames) is raw bytes again.
    :inet.setopts(socket, packet: :raw)
    result
  end

  defp read_headers(_socket, _timeout, _acc, count) when count > @max_headers,
    do: {:error, :too_many_headers}

  defp read_headers(socket, timeout, acc, count) do
    case :gen_tcp.recv(socket, 0, timeout) do
      {:ok, {:http_header, _, name, _, value}} ->
        key = name |> to_string() |> String.downcase()
        read_headers(socket, timeout, Map.put(acc, key, value), count + 1)

      {:ok, :http_eoh} ->
        {:ok, acc}

      {:ok, other} ->
        {:error, {:bad_header, other}}

      {:error, _} = error ->
        error
    end
  end

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

  defp reason(200), do: "OK"
  defp reason(400), do: "Bad Request"
  defp reason(404), do: "Not Found"
  defp reason(405), do: "Method Not Allowed"
  defp reason(_), do: "Error"
end
