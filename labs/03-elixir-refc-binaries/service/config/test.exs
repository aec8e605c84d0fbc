import Config

# Port 0: the OS picks a free port; tests ask SocketApi.Listener.port/0 for it.
# A short send timeout, so that the test of a client that stops reading is quick.
config :socket_api, port: 0, upstream_latency_ms: 0, send_timeout_ms: 500

config :logger, level: :warning
