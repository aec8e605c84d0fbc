defmodule SocketApi.Upstream do
  @moduledoc """
  Simulated upstream services (profiles, activity, attachments) that a `list_items`
  request fans out to, one batch call per service.

  Each returns, per item, a response body of the size configured for that service:
  kilobytes, like a real JSON document fetched over HTTP. Bodies over 64 bytes are
  reference-counted binaries on the BEAM's shared binary heap; a process holds only a
  small reference to each.
  """

  # 64 printable bytes, so a body needs no escaping when it is encoded as JSON.
  @filler "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"

  @doc "One body per id from `service`, after the service's configured latency."
  @spec fetch_many(atom(), [pos_integer()]) :: [binary()]
  def fetch_many(service, ids) do
    size = Keyword.fetch!(Application.fetch_env!(:socket_api, :upstreams), service)
    Process.sleep(Application.fetch_env!(:socket_api, :upstream_latency_ms))
    Enum.map(ids, &body(service, &1, size))
  end

  @spec services() :: [atom()]
  def services, do: Keyword.keys(Application.fetch_env!(:socket_api, :upstreams))

  # A fresh binary per call, as a socket read or a JSON decode would produce.
  defp body(service, id, size) do
    prefix = "#{service}:#{id}:"
    repeats = div(size - byte_size(prefix), byte_size(@filler)) + 1
    filler = :binary.part(:binary.copy(@filler, repeats), 0, size - byte_size(prefix))
    IO.iodata_to_binary([prefix, filler])
  end
end
