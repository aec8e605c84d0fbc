defmodule SocketApi.Protocol do
  @moduledoc """
  The JSON messages of the API, one per WebSocket text frame.

  Client to server (`ref` is any string the client picks; replies echo it):

      {"type": "join",    "ref": "1", "topic": "accounts:42"}
      {"type": "request", "ref": "2", "topic": "accounts:42", "op": "list_items", "params": {"limit": 100}}
      {"type": "leave",   "ref": "3", "topic": "accounts:42"}

  Server to client:

      {"type": "joined", "ref": "1", "topic": "accounts:42"}
      {"type": "reply",  "ref": "2", "topic": "accounts:42", "status": "ok", "items": [...]}
      {"type": "left",   "ref": "3", "topic": "accounts:42"}
      {"type": "error",  "ref": "2", "reason": "not_joined"}

  A malformed message gets an `error` reply and the connection stays open; only a
  broken WebSocket stream closes it.
  """

  @max_limit 100

  @type message ::
          {:join, binary(), binary()}
          | {:leave, binary(), binary()}
          | {:request, binary(), binary(), %{limit: 1..100}}

  @spec decode(binary()) :: {:ok, message()} | {:error, binary() | nil, atom()}
  def decode(text) do
    case safe_decode(text) do
      {:ok, %{} = doc} -> message(doc)
      {:ok, _other} -> {:error, nil, :not_an_object}
      :error -> {:error, nil, :invalid_json}
    end
  end

  defp safe_decode(text) do
    {:ok, :jiffy.decode(text, [:return_maps])}
  catch
    # jiffy reports a syntax error by throwing {:error, {position, reason}}.
    _kind, _reason -> :error
  end

  defp message(%{"type" => "join", "ref" => ref, "topic" => topic} = doc)
       when is_binary(ref) and is_binary(topic),
       do: with_topic(doc, {:join, ref, topic})

  defp message(%{"type" => "leave", "ref" => ref, "topic" => topic} = doc)
       when is_binary(ref) and is_binary(topic),
       do: with_topic(doc, {:leave, ref, topic})

  defp message(%{"type" => "request", "ref" => ref, "topic" => topic, "op" => "list_items"} = doc)
       when is_binary(ref) and is_binary(topic) do
    case Map.get(doc, "params", %{}) do
      %{"limit" => limit} when is_integer(limit) and limit in 1..@max_limit ->
        with_topic(doc, {:request, ref, topic, %{limit: limit}})

      %{} = params when not is_map_key(params, "limit") ->
        with_topic(doc, {:request, ref, topic, %{limit: @max_limit}})

      _ ->
        {:error, ref, :bad_params}
    end
  end

  defp message(%{"type" => "request", "ref" => ref}) when is_binary(ref),
    do: {:error, ref, :unknown_op}

  defp message(%{"type" => type} = doc) when type in ["join", "leave", "request"],
    do: {:error, ref_of(doc), :missing_field}

  defp message(doc), do: {:error, ref_of(doc), :unknown_type}

  defp with_topic(doc, message) do
    topic = elem(message, 2)

    if byte_size(topic) in 1..128 and String.valid?(topic),
      do: {:ok, message},
      else: {:error, doc["ref"], :bad_topic}
  end

  defp ref_of(%{"ref" => ref}) when is_binary(ref), do: ref
  defp ref_of(_doc), do: nil

  @spec joined(binary(), binary()) :: iodata()
  def joined(ref, topic), do: encode(%{"type" => "joined", "ref" => ref, "topic" => topic})

  @spec left(binary(), binary()) :: iodata()
  def left(ref, topic), do: encode(%{"type" => "left", "ref" => ref, "topic" => topic})

  @spec reply(binary(), binary(), [map()]) :: iodata()
  def reply(ref, topic, items) do
    encode(%{
      "type" => "reply",
      "ref" => ref,
      "topic" => topic,
      "status" => "ok",
      "items" => items
    })
  end

  @doc "An error reply; `ref` is `null` when the message had none (or was not JSON)."
  @spec error(binary() | nil, atom()) :: iodata()
  def error(ref, reason),
    do: encode(%{"type" => "error", "ref" => json_null(ref), "reason" => reason})

  # jiffy writes any atom as a string, `nil` included; its JSON null is the atom `null`.
  defp json_null(nil), do: :null
  defp json_null(value), do: value

  defp encode(doc), do: :jiffy.encode(doc)
end
