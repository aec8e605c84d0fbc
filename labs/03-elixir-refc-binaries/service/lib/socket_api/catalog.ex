defmodule SocketApi.Catalog do
  @moduledoc """
  The API behind `list_items`: up to 100 items for a topic, each projected from the
  JSON documents of several upstream services.

  Every document is decoded with jiffy, and an item is projected from each service's
  `summary`, a quarter of its document. It also says whether the item `changed`
  since the etags the caller last saw; the new etags (the profiles' versions) come
  back beside the items, for the caller to keep.
  """

  alias SocketApi.Upstream

  @type etags :: %{pos_integer() => binary()}

  @spec list_items(binary(), %{limit: pos_integer()}, etags()) :: {[map()], etags()}
  def list_items(topic, %{limit: limit}, seen) do
    ids = Enum.to_list(1..limit)

    # One column of decoded documents per upstream service, zipped into rows.
    columns =
      for service <- Upstream.services() do
        service |> Upstream.fetch_many(ids) |> Enum.map(&:jiffy.decode(&1, [:return_maps]))
      end

    rows = Enum.zip(columns)
    items = Enum.map(rows, &item(topic, &1, seen))
    etags = Map.new(rows, fn row -> {profile(row)["id"], profile(row)["etag"]} end)
    {items, etags}
  end

  defp item(topic, row, seen) do
    %{"id" => id, "etag" => etag} = profile(row)
    docs = Tuple.to_list(row)

    Map.new(docs, &{&1["service"], &1["summary"]})
    |> Map.merge(%{"id" => id, "topic" => topic, "version" => etag, "changed" => seen[id] != etag})
  end

  # The first service's document names the item's version.
  defp profile(row), do: elem(row, 0)
end
