defmodule SocketApi.Acceptor do
  @moduledoc """
  One of the listener's acceptors: it blocks in `:gen_tcp.accept/1`, hands each new
  socket to a fresh `SocketApi.Connection` and goes back to accepting. Several share
  the listen socket, so one busy handing over never stops the others accepting.
  """
  use Task, restart: :permanent

  alias SocketApi.Connection

  require Logger

  # Out of file descriptors (or of ports): no accept can succeed until some socket is
  # closed, and retrying at once would spin a scheduler, so pause between attempts.
  @out_of_resources [:emfile, :enfile, :system_limit]
  @backoff_ms 100

  @spec start_link(:gen_tcp.socket()) :: {:ok, pid()}
  def start_link(listen), do: Task.start_link(__MODULE__, :accept_loop, [listen])

  @doc false
  def accept_loop(listen) do
    case :gen_tcp.accept(listen) do
      {:ok, socket} ->
        hand_over(socket)

      {:error, :closed} ->
        # The listen socket went with its owner, the listener, and so do we.
        exit(:closed)

      {:error, reason} when reason in @out_of_resources ->
        Logger.warning("accept failed (#{reason}); accepting again in #{@backoff_ms} ms")
        Process.sleep(@backoff_ms)

      {:error, _transient} ->
        # e.g. a connection reset before it was accepted: take the next one.
        :ok
    end

    accept_loop(listen)
  end

  @doc """
  Gives `socket`, which the calling process must own, to a new `SocketApi.Connection`.
  If the hand-over fails, the socket is closed and the connection started for it is
  stopped, so that nothing is left waiting for a socket that will never come.
  """
  @spec hand_over(:gen_tcp.socket()) :: {:ok, pid()} | {:error, term()}
  def hand_over(socket) do
    case DynamicSupervisor.start_child(SocketApi.ConnectionSupervisor, Connection) do
      {:ok, pid} -> give(socket, pid)
      error -> close(socket, error)
    end
  end

  defp give(socket, pid) do
    case :gen_tcp.controlling_process(socket, pid) do
      :ok ->
        Connection.take(pid, socket)
        {:ok, pid}

      error ->
        DynamicSupervisor.terminate_child(SocketApi.ConnectionSupervisor, pid)
        close(socket, error)
    end
  end

  defp close(socket, error) do
    :gen_tcp.close(socket)
    error
  end
end
