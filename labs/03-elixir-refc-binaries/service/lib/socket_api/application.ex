defmodule SocketApi.Application do
  @moduledoc """
  The supervision tree:

      SocketApi.Supervisor (one_for_one)
      ├── SocketApi.Registry            which processes are open WebSocket connections
      ├── SocketApi.ChannelSupervisor   one SocketApi.Channel per topic a socket joined
      ├── SocketApi.ConnectionSupervisor one SocketApi.Connection per accepted socket
      └── SocketApi.Listener            the listen socket and its acceptors (one_for_one)
          └── SocketApi.Acceptor × 4    each accepts sockets and hands them to Connections

  The listener starts last so that nothing is accepted before the supervisors that
  hold connections and channels exist, and stops first on shutdown.
  """
  use Application

  @impl true
  def start(_type, _args) do
    env = Application.get_all_env(:socket_api)

    children = [
      {Registry, keys: :duplicate, name: SocketApi.Registry},
      {DynamicSupervisor, name: SocketApi.ChannelSupervisor, strategy: :one_for_one},
      {DynamicSupervisor, name: SocketApi.ConnectionSupervisor, strategy: :one_for_one},
      {SocketApi.Listener, Keyword.take(env, [:ip, :port, :acceptors])}
    ]

    Supervisor.start_link(children, strategy: :one_for_one, name: SocketApi.Supervisor)
  end
end
