defmodule SocketApi.Channel do
  @moduledoc """
  One process per topic a socket has joined (the role a Phoenix channel server plays).

  It lives as long as the join: it stops on `leave` and when its connection goes
  away (it monitors the connection). Requests arrive as casts. The channel builds the
  reply, encodes it, and sends its connection the encoded iodata, as
  `{:socket_push, :text, iodata}`, the message Phoenix's channel server sends its socket
  process: the connection writes it to the socket as one text frame. Between requests
  it keeps each item's last version (`seen`, the profiles' etags), so that the next
  reply can say which items changed.
  """
  use GenServer, restart: :temporary

  alias SocketApi.{Catalog, Protocol}

  require Logger

  @spec start_link({binary(), pid()}) :: GenServer.on_start()
  def start_link({topic, connection}), do: GenServer.start_link(__MODULE__, {topic, connection})

  @doc "Asks for `params` on behalf of `ref`; the connection gets `{:socket_push, :text, iodata}`."
  @spec request(pid(), binary(), map()) :: :ok
  def request(channel, ref, params), do: GenServer.cast(channel, {:request, ref, params})

  @impl true
  def init({topic, connection}) do
    Process.monitor(connection)
    {:ok, %{topic: topic, connection: connection, seen: %{}}}
  end

  @impl true
  def handle_cast({:request, ref, params}, state) do
    {items, etags} = Catalog.list_items(state.topic, params, state.seen)
    payload = Protocol.reply(ref, state.topic, items)
    send(state.connection, {:socket_push, :text, payload})
    {:noreply, %{state | seen: Map.merge(state.seen, etags)}}
  end

  @impl true
  def handle_info({:DOWN, _, :process, pid, _}, %{connection: pid} = state),
    do: {:stop, :normal, state}

  # Anything else (a late reply, a stray monitor message) is not worth the channel's
  # life: defining handle_info/2 replaced GenServer's default clause, which logs and
  # carries on, so this one does the same.
  def handle_info(message, state) do
    Logger.warning("channel #{state.topic} ignored an unexpected message: #{inspect(message)}")
    {:noreply, state}
  end
end
