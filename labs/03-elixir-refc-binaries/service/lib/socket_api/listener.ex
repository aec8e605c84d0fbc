defmodule SocketApi.Listener do
  @moduledoc """
  Owns the listening socket and a few acceptor processes.

  Each acceptor blocks in `:gen_tcp.accept/1`, hands the new socket to a fresh
  `SocketApi.Connection` and goes back to accepting. The acceptors are linked to the
  listener: if the listen socket goes, they go, and the supervisor restarts the lot.
  """
  use GenServer

  alias SocketApi.Connection

  def start_link(opts), do: GenServer.start_link(__MODULE__, opts, name: __MODULE__)

  @doc "The port actually listened on (the configured one, or the OS's pick for 0)."
  def port, do: GenServer.call(__MODULE__, :port)

  @impl true
  def init(opts) do
    listen_opts = [
      :binary,
      ip: Keyword.fetch!(opts, :ip),
      active: false,
      packet: :raw,
      reuseaddr: true,
      nodelay: true,
      backlog: 1024
    ]

    case :gen_tcp.listen(Keyword.fetch!(opts, :port), listen_opts) do
      {:ok, listen} ->
        for _ <- 1..Keyword.get(opts, :acceptors, 4), do: spawn_link(fn -> accept(listen) end)
        {:ok, listen}

      {:error, reason} ->
        {:stop, {:listen_failed, reason}}
    end
  end

  @impl true
  def handle_call(:port, _from, listen) do
    {:ok, port} = :inet.port(listen)
    {:reply, port, listen}
  end

  defp accept(listen) do
    case :gen_tcp.accept(listen) do
      {:ok, socket} ->
        hand_over(socket)
        accept(listen)

      {:error, :closed} ->
        exit(:normal)

      {:error, _transient} ->
        # e.g. :emfile under a burst: keep accepting rather than take the node down.
        accept(listen)
    end
  end

  defp hand_over(socket) do
    with {:ok, pid} <- DynamicSupervisor.start_child(SocketApi.ConnectionSupervisor, Connection),
         :ok <- :gen_tcp.controlling_process(socket, pid) do
      Connection.take(pid, socket)
    else
      _ -> :gen_tcp.close(socket)
    end
  end
end
