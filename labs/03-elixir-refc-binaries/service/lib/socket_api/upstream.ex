defmodule SocketApi.Upstream do
  @moduledoc """
  Simulated upstream services (profiles, activity, attachments) that a `list_items`
  request fans out to, one batch call per service.

  Each returns, per item, a JSON document of the size configured for that service, as
  the body of an HTTP response would arrive: one binary per document.

  A document:

      {"id":7,"service":"profiles","etag":"<40 hex digits>","summary":"...","detail":"..."}

  `summary` is a quarter of the document, the part a `list_items` reply shows;
  `detail` fills the rest. `etag` names the document's version (a SHA-1 in hex, 40 bytes); it changes every 20 s.
  """

  # 64 printable bytes, so that no string needs escaping in JSON.
  @filler "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"

  @version_s 20

  @doc "One document per id from `service`, after the service's configured latency."
  @spec fetch_many(atom(), [pos_integer()]) :: [binary()]
  def fetch_many(service, ids) do
    size = Keyword.fetch!(Application.fetch_env!(:socket_api, :upstreams), service)
    Process.sleep(Application.fetch_env!(:socket_api, :upstream_latency_ms))
    Enum.map(ids, &document(service, &1, size))
  end

  @spec services() :: [atom()]
  def services, do: Keyword.keys(Application.fetch_env!(:socket_api, :upstreams))

  defp document(service, id, size) do
    name = Atom.to_string(service)
    # A document changes every @version_s seconds, and so does its etag.
    version = div(System.system_time(:second), @version_s)
    etag = Base.encode16(:crypto.hash(:sha, "#{name}/#{id}/#{version}"), case: :lower)
    head = ~s({"id":#{id},"service":"#{name}","etag":"#{etag}","summary":")
    summary_size = div(size, 4)
    detail_size = max(size - byte_size(head) - summary_size - byte_size(~s(","detail":"")) - 2, 0)

    IO.iodata_to_binary([
      head,
      text(name, id, summary_size),
      ~s(","detail":"),
      text(name, id, detail_size),
      ~s("})
    ])
  end

  # `size` printable bytes that start with the service and id.
  defp text(name, id, size) do
    prefix = "#{name}:#{id}:"
    repeats = div(size, byte_size(@filler)) + 1
    :binary.part(prefix <> :binary.copy(@filler, repeats), 0, size)
  end
end
