import Config

# Port 0: the OS picks a free port; tests ask SocketApi.Listener.port/0 for it.
config :socket_api, port: 0, upstream_latency_ms: 0

config :logger, level: :warning
