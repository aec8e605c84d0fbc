defmodule SocketApi.Handshake do
  @moduledoc """
  The server side of the RFC 6455 opening handshake. The accept key is computed by
  `:cow_ws.encode_key/1`, the same function Cowboy uses.
  """

  @doc "The `101 Switching Protocols` response for a valid upgrade request."
  @spec accept(SocketApi.HTTP.request()) :: {:ok, iodata()} | {:error, atom()}
  def accept(%{method: :GET, headers: headers}) do
    with :ok <- require_token(headers, "upgrade", "websocket", :missing_upgrade),
         :ok <- require_token(headers, "connection", "upgrade", :missing_connection),
         "13" <- Map.get(headers, "sec-websocket-version", :bad_version),
         key when is_binary(key) <- Map.get(headers, "sec-websocket-key", :missing_key),
         :ok <- check_key(key) do
      {:ok,
       [
         "HTTP/1.1 101 Switching Protocols\r\n",
         "upgrade: websocket\r\n",
         "connection: Upgrade\r\n",
         "sec-websocket-accept: ",
         :cow_ws.encode_key(key),
         "\r\n\r\n"
       ]}
    else
      error when is_atom(error) -> {:error, error}
      _ -> {:error, :bad_handshake}
    end
  end

  def accept(_request), do: {:error, :not_get}

  # RFC 6455 4.1: the key is a random 16-byte nonce, base64-encoded (24 characters).
  defp check_key(key) do
    case Base.decode64(key) do
      {:ok, <<_nonce::binary-size(16)>>} -> :ok
      _ -> :bad_key
    end
  end

  # Header values are comma-separated token lists, compared case-insensitively.
  defp require_token(headers, name, token, error) do
    tokens =
      headers
      |> Map.get(name, "")
      |> String.downcase()
      |> String.split(",", trim: true)
      |> Enum.map(&String.trim/1)

    if token in tokens, do: :ok, else: error
  end
end
