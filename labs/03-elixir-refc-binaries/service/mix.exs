defmodule SocketApi.MixProject do
  use Mix.Project

  def project do
    [
      app: :socket_api,
      version: "0.1.0",
      elixir: "~> 1.14",
      elixirc_paths: elixirc_paths(Mix.env()),
      start_permanent: Mix.env() == :prod,
      # No Hex packages: cowlib (WebSocket framing) and jiffy (JSON) come from the
      # Debian packages erlang-cowlib and erlang-jiffy, which put them on the OTP code
      # path. Listing them as applications is enough for Mix to find and start them.
      deps: []
    ]
  end

  def application do
    [
      extra_applications: [:logger, :crypto, :cowlib, :jiffy],
      mod: {SocketApi.Application, []}
    ]
  end

  defp elixirc_paths(:test), do: ["lib", "test/support"]
  defp elixirc_paths(_), do: ["lib"]
end
