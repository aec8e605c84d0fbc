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

  # Encoded as Phoenix's JSON serializer encodes a message (`encode_to_iodata!/1`:
  # Poison's in Phoenix 1.3, Jason's from 1.4): iodata, built as those two build it.
  # Neither library can be fetched here (no Hex), so this is the course's own encoder,
  # for the terms the protocol sends.
  defp encode(doc), do: json(doc)

  defp json(map) when is_map(map) do
    pairs = Enum.map(map, fn {key, value} -> [json(to_key(key)), ?:, json(value)] end)
    [?{, Enum.intersperse(pairs, ?,), ?}]
  end

  defp json(list) when is_list(list), do: [?[, Enum.intersperse(Enum.map(list, &json/1), ?,), ?]]
  defp json(string) when is_binary(string), do: string_json(string, plain?(string))
  defp json(integer) when is_integer(integer), do: Integer.to_string(integer)
  defp json(float) when is_float(float), do: :erlang.float_to_binary(float, [:short])
  defp json(literal) when literal in [true, false], do: Atom.to_string(literal)
  defp json(:null), do: "null"
  defp json(atom) when is_atom(atom), do: json(Atom.to_string(atom))

  defp to_key(key) when is_atom(key), do: Atom.to_string(key)
  defp to_key(key) when is_binary(key), do: key

  # A string with nothing to escape, between quotes, as Poison and Jason write it.
  defp string_json(string, true), do: [?", string, ?"]
  # Anything to escape: jiffy writes it (Poison and Jason escape piecewise, which the
  # protocol's strings never need).
  defp string_json(string, false), do: :jiffy.encode(string)

  # JSON must escape `"`, `\` and the control characters; UTF-8 passes as it is, as in
  # Jason's default (`escape: :json`). Invalid UTF-8 goes to jiffy, which refuses it.
  defp plain?(<<c, _::binary>>) when c < 0x20 or c == ?" or c == ?\\, do: false
  defp plain?(<<_::utf8, rest::binary>>), do: plain?(rest)
  defp plain?(<<>>), do: true
  defp plain?(_invalid), do: false
end
