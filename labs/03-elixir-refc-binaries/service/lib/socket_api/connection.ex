defmodule SocketApi.Connection do
  @moduledoc """
  One process per accepted socket (the role Cowboy's WebSocket process plays under
  Phoenix).

  It reads the HTTP request head. A plain request (`/healthz`, `/metrics`, `/debug/...`)
  gets one response and the process stops. A WebSocket upgrade turns the process into
  the socket's owner for the rest of its life: it decodes frames, starts a
  `SocketApi.Channel` per joined topic, routes requests to them, and writes the
  payloads they send back (replies they encoded themselves) as text frames.

  A bad frame closes the socket with the matching close code; a malformed message
  gets an error reply. Either way only this connection and its channels are affected.
  """
  use GenServer, restart: :temporary

  alias SocketApi.{Channel, Diagnostics, Frames, Handshake, HTTP, Introspection, Protocol}

  require Logger

  def start_link(_opts), do: GenServer.start_link(__MODULE__, :ok)

  @doc "Hands over an accepted socket; the caller must already have made us its owner."
  @spec take(pid(), :gen_tcp.socket()) :: :ok
  def take(pid, socket), do: GenServer.cast(pid, {:take, socket})

  @impl true
  def init(:ok), do: {:ok, %{socket: nil, frames: nil, topics: %{}}}

  @impl true
  def handle_cast({:take, socket}, state) do
    timeout = Application.fetch_env!(:socket_api, :handshake_timeout_ms)

    case HTTP.read_request(socket, timeout) do
      {:ok, request} -> route(request, %{state | socket: socket})
      {:error, reason} -> refuse(%{state | socket: socket}, reason)
    end
  end

  @impl true
  def handle_info({:tcp, socket, data}, %{socket: socket} = state) do
    case Frames.feed(state.frames, data) do
      {:ok, events, frames} -> handle_events(events, %{state | frames: frames})
      {:error, code} -> close_and_stop(state, code)
    end
  end

  def handle_info({:tcp_closed, socket}, %{socket: socket} = state),
    do: {:stop, :normal, state}

  def handle_info({:tcp_error, socket, _reason}, %{socket: socket} = state),
    do: {:stop, :normal, state}

  # A channel's reply, already encoded (iodata): only written to the socket here.
  def handle_info({:socket_push, :text, payload}, state) do
    send_text(state, payload)
    {:noreply, state}
  end

  # A channel that dies on its own (not through `leave`) is forgotten, and the client
  # told, so that it can join again.
  def handle_info({:DOWN, _, :process, pid, reason}, state) do
    case Enum.find(state.topics, fn {_topic, channel} -> channel == pid end) do
      {topic, _} ->
        Logger.warning("channel #{topic} exited: #{inspect(reason)}")
        send_text(state, Protocol.error(nil, :channel_exited))
        {:noreply, %{state | topics: Map.delete(state.topics, topic)}}

      nil ->
        {:noreply, state}
    end
  end

  # -- HTTP ------------------------------------------------------------------------

  @routes [
    "/healthz",
    "/metrics",
    "/debug/processes",
    "/debug/gc",
    "/debug/top",
    "/debug/bin_leak"
  ]

  defp route(%{path: "/socket"} = request, state) do
    case Handshake.accept(request) do
      {:ok, response} ->
        :ok = :gen_tcp.send(state.socket, response)
        {:ok, _} = Registry.register(SocketApi.Registry, :websocket, nil)
        max = Application.fetch_env!(:socket_api, :max_message_bytes)
        # The client may have sent its first frames right behind the request head:
        # take them as if just received (this also asks for the next data).
        handle_info({:tcp, state.socket, request.rest}, %{state | frames: Frames.new(max)})

      {:error, reason} ->
        respond_and_stop(state, 400, "bad websocket handshake: #{reason}\n")
    end
  end

  defp route(%{method: :GET, path: "/healthz"}, state),
    do: respond_and_stop(state, 200, "ok\n")

  defp route(%{method: :GET, path: "/metrics"}, state),
    do: respond_json(state, Introspection.metrics())

  defp route(%{method: :GET, path: "/debug/processes", query: query}, state),
    do: respond_json(state, Introspection.top_processes(top_n(query)))

  defp route(%{method: :POST, path: "/debug/gc"}, state),
    do: respond_json(state, Introspection.collect_everything())

  defp route(%{method: :GET, path: "/debug/top", query: query}, state) do
    by = Map.get(URI.decode_query(query), "by", "binary_memory")

    case Diagnostics.attribute(by) do
      {:ok, attribute} -> respond_json(state, Diagnostics.top_report(attribute, top_n(query)))
      :error -> respond_and_stop(state, 400, "by: one of #{inspect(Diagnostics.attributes())}\n")
    end
  end

  defp route(%{method: :POST, path: "/debug/bin_leak", query: query}, state),
    do: respond_json(state, Diagnostics.bin_leak_report(top_n(query)))

  defp route(%{path: path}, state) when path in @routes,
    do: respond_and_stop(state, 405, "method not allowed\n")

  defp route(_request, state), do: respond_and_stop(state, 404, "not found\n")

  # A request head that could not be read whole: answer why, if the client is still
  # there, and close without a reset that could destroy the answer.
  defp refuse(state, reason) do
    {status, body} =
      case reason do
        :uri_too_long -> {414, "uri too long\n"}
        :header_too_large -> {431, "request header fields too large\n"}
        _ -> {400, "bad request\n"}
      end

    :gen_tcp.send(state.socket, HTTP.response(status, "text/plain", body))
    HTTP.linger_close(state.socket)
    {:stop, :normal, state}
  end

  defp top_n(query) do
    case URI.decode_query(query) do
      %{"top" => top} ->
        case Integer.parse(top) do
          {n, ""} when n in 1..1000 -> n
          _ -> 20
        end

      _ ->
        20
    end
  end

  defp respond_json(state, doc) do
    :gen_tcp.send(state.socket, HTTP.response(200, "application/json", :jiffy.encode(doc)))
    :gen_tcp.close(state.socket)
    {:stop, :normal, state}
  end

  defp respond_and_stop(state, status, body) do
    :gen_tcp.send(state.socket, HTTP.response(status, "text/plain", body))
    :gen_tcp.close(state.socket)
    {:stop, :normal, state}
  end

  # -- WebSocket -------------------------------------------------------------------

  defp handle_events([], state) do
    :ok = :inet.setopts(state.socket, active: :once)
    {:noreply, state}
  end

  defp handle_events([{:text, text} | rest], state),
    do: handle_events(rest, handle_message(Protocol.decode(text), state))

  defp handle_events([{:binary, _} | rest], state) do
    send_text(state, Protocol.error(nil, :binary_not_supported))
    handle_events(rest, state)
  end

  defp handle_events([{:ping, payload} | rest], state) do
    :gen_tcp.send(state.socket, Frames.pong(payload))
    handle_events(rest, state)
  end

  defp handle_events([{:pong, _} | rest], state), do: handle_events(rest, state)

  defp handle_events([{:close, _code, _reason} | _], state), do: close_and_stop(state, 1000)

  defp handle_message({:ok, {:join, ref, topic}}, state) do
    max_topics = Application.fetch_env!(:socket_api, :max_topics_per_socket)

    cond do
      Map.has_key?(state.topics, topic) ->
        reply_error(state, ref, :already_joined)

      map_size(state.topics) >= max_topics ->
        reply_error(state, ref, :too_many_topics)

      true ->
        {:ok, channel} =
          DynamicSupervisor.start_child(SocketApi.ChannelSupervisor, {Channel, {topic, self()}})

        Process.monitor(channel)
        send_text(state, Protocol.joined(ref, topic))
        %{state | topics: Map.put(state.topics, topic, channel)}
    end
  end

  defp handle_message({:ok, {:request, ref, topic, params}}, state) do
    case state.topics do
      %{^topic => channel} ->
        Channel.request(channel, ref, params)
        state

      _ ->
        reply_error(state, ref, :not_joined)
    end
  end

  defp handle_message({:ok, {:leave, ref, topic}}, state) do
    case Map.pop(state.topics, topic) do
      {nil, _} ->
        reply_error(state, ref, :not_joined)

      {channel, topics} ->
        DynamicSupervisor.terminate_child(SocketApi.ChannelSupervisor, channel)
        send_text(state, Protocol.left(ref, topic))
        %{state | topics: topics}
    end
  end

  defp handle_message({:error, ref, reason}, state), do: reply_error(state, ref, reason)

  defp reply_error(state, ref, reason) do
    send_text(state, Protocol.error(ref, reason))
    state
  end

  # A send that fails (the client stopped reading for the listener's send timeout, and
  # the socket was closed) ends the socket's process as if the client had closed it.
  defp send_text(state, json) do
    with {:error, _} <- :gen_tcp.send(state.socket, Frames.text(json)),
         do: send(self(), {:tcp_closed, state.socket})
  end

  defp close_and_stop(state, code) do
    :gen_tcp.send(state.socket, Frames.close(code))
    :gen_tcp.close(state.socket)
    {:stop, :normal, state}
  end
end
