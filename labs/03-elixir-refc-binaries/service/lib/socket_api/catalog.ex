defmodule SocketApi.Catalog do
  @moduledoc """
  The API behind `list_items`: assembles up to 100 items for a topic, each from the
  responses of several upstream services.
  """

  alias SocketApi.Upstream

  @spec list_items(binary(), %{limit: pos_integer()}) :: [map()]
  def list_items(topic, %{limit: limit}) do
    ids = Enum.to_list(1..limit)

    # One column of {field, value} pairs per upstream service, zipped into rows.
    columns =
      for service <- Upstream.services() do
        field = Atom.to_string(service)
        Enum.map(Upstream.fetch_many(service, ids), &{field, &1})
      end

    [Enum.map(ids, &[{"id", &1}, {"topic", topic}]) | columns]
    |> Enum.zip_with(fn [base | fields] -> Map.new(base ++ fields) end)
  end
end
