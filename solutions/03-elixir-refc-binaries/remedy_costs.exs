# What each remedy of the lab costs per use, measured on the node this runs on:
#
#     elixir solutions/03-elixir-refc-binaries/remedy_costs.exs
#
# - a short-lived worker per request: start a task under a Task.Supervisor, get its
#   result back as a message, let it exit (Task.Supervisor.async_nolink + Task.await);
# - a collection per reply: :erlang.garbage_collect/1 of an idle process shaped like
#   the lab's connection after a reply (a small state, one 219 KB binary referenced);
# - a hibernation: a call to a process that hibernated after its last message, against
#   the same call to one that did not (the wake-up is the difference).
# Each figure is the median of 2,000 runs, in microseconds. A busy machine makes every
# figure larger; compare them with each other, and with what a request costs (the lab's
# requests take milliseconds).
defmodule RemedyCosts do
  @runs 2_000

  def median_us(fun) do
    times = for _ <- 1..@runs, do: elem(:timer.tc(fun), 0)
    times |> Enum.sort() |> Enum.at(div(@runs, 2))
  end

  defmodule Holder do
    use GenServer
    def init(hibernate?), do: {:ok, %{payload: nil, hibernate?: hibernate?}}

    def handle_call({:keep, payload}, _from, state), do: reply(:ok, %{state | payload: payload})
    def handle_call(:ping, _from, state), do: reply(:pong, state)

    defp reply(answer, %{hibernate?: true} = state), do: {:reply, answer, state, :hibernate}
    defp reply(answer, state), do: {:reply, answer, state}
  end

  def report do
    {:ok, sup} = Task.Supervisor.start_link()

    worker =
      median_us(fn ->
        sup |> Task.Supervisor.async_nolink(fn -> :ok end) |> Task.await()
      end)

    payload = :binary.copy("r", 219_000)
    {:ok, idle} = GenServer.start_link(Holder, false)
    GenServer.call(idle, {:keep, payload})
    collect = median_us(fn -> :erlang.garbage_collect(idle) end)

    {:ok, awake} = GenServer.start_link(Holder, false)
    {:ok, sleeper} = GenServer.start_link(Holder, true)
    awake_call = median_us(fn -> GenServer.call(awake, :ping) end)
    woken_call = median_us(fn -> GenServer.call(sleeper, :ping) end)

    IO.puts("a short-lived worker per request (start, result, exit): #{worker} us")
    IO.puts("a collection of an idle connection-sized process: #{collect} us")
    IO.puts("a call to an awake process: #{awake_call} us; to a hibernated one: #{woken_call} us")
    IO.puts("OTP #{:erlang.system_info(:otp_release)}, #{System.schedulers_online()} schedulers")
  end
end

RemedyCosts.report()
