import Config

# The harness starts the service on a free port it chose: SOCKET_API_PORT=<port>.
if port = System.get_env("SOCKET_API_PORT") do
  config :socket_api, port: String.to_integer(port)
end
