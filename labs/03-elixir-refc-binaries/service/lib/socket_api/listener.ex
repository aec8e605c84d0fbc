defmodule SocketApi.Listener do
  @moduledoc """
  The listen socket and the acceptor processes that take connections from it: a
  supervisor of its own, the shape of Ranch's acceptor pool under Cowboy.

  `init/1` opens the socket, so this supervisor owns it. Its acceptors share the
  socket, and one that crashes is restarted on it. If the listener itself exits (on
  shutdown, or when acceptors crash too often) the socket closes with it, and its
  restart opens a fresh one.
  """
  use Supervisor

  alias SocketApi.Acceptor

  def start_link(opts), do: Supervisor.start_link(__MODULE__, opts, name: __MODULE__)

  @doc "The port actually listened on (the configured one, or the OS's pick for 0)."
  @spec port() :: :inet.port_number()
  def port do
    # Each acceptor's child spec carries the listen socket.
    {:ok, %{start: {Acceptor, :start_link, [listen]}}} =
      :supervisor.get_childspec(__MODULE__, {Acceptor, 1})

    {:ok, port} = :inet.port(listen)
    port
  end

  @impl true
  def init(opts) do
    listen_opts = [
      :binary,
      ip: Keyword.fetch!(opts, :ip),
      active: false,
      packet: :raw,
      reuseaddr: true,
      nodelay: true,
      backlog: 1024,
      # A client that stops reading must not block its connection in :gen_tcp.send/2
      # for ever, with its replies queued in the port: after this long without
      # progress the send fails and the socket closes (Ranch's defaults: 30 s, close).
      send_timeout: Application.get_env(:socket_api, :send_timeout_ms, 30_000),
      send_timeout_close: true
    ]

    port = Keyword.fetch!(opts, :port)

    case :gen_tcp.listen(port, listen_opts) do
      {:ok, listen} ->
        acceptors =
          for id <- 1..Keyword.get(opts, :acceptors, 4),
              do: Supervisor.child_spec({Acceptor, listen}, id: {Acceptor, id})

        Supervisor.init(acceptors, strategy: :one_for_one)

      {:error, reason} ->
        raise "cannot listen on port #{port}: #{:inet.format_error(reason)}"
    end
  end
end
