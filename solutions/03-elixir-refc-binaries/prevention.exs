# Two guards against this lab's leak, tried on the node this runs on (the course: OTP 25):
#
#     elixir solutions/03-elixir-refc-binaries/prevention.exs
#
# 1. max_heap_size: a process shaped like the broken channel (a small heap, 1.2 MB of
#    refc binaries referenced) under a limit of 100,000 words (0.8 MB), asking for
#    `include_shared_binaries: true`. Prints which keys the node kept, and whether the
#    process was killed when it collected; then the control, a heap over the limit.
# 2. A binary-memory alert: what one look costs, with 480 idle processes each holding a
#    binary (the broken run's 240 channels and 240 connections): the node's figure
#    (`:erlang.memory(:binary)`) and a scan of every process's binaries for the top 5
#    (`Process.info(pid, :binary)`). Median of 200 looks each, in microseconds.
# tools/leaklab/tests/test_prevention_03.py runs this and checks the first part.
defmodule Prevention do
  @limit_words 100_000
  @binaries 12
  @binary_bytes 100_000

  # The control: the same limit, and a heap that outgrows it (a list of 200,000 cells,
  # 400,000 words), so that the limit is shown to work on this node.
  def max_heap_size_control do
    {pid, ref} =
      spawn_monitor(fn ->
        Process.flag(:max_heap_size, %{size: @limit_words, kill: true, error_logger: false})
        list = Enum.to_list(1..200_000)
        :erlang.garbage_collect()
        exit({:survived, length(list)})
      end)

    receive do
      {:DOWN, ^ref, :process, ^pid, {:survived, _}} -> :survived
      {:DOWN, ^ref, :process, ^pid, reason} -> {:killed, reason}
    after
      5_000 -> :no_answer
    end
  end

  def max_heap_size do
    me = self()

    pid =
      spawn(fn ->
        Process.flag(:max_heap_size, %{
          size: @limit_words,
          kill: true,
          error_logger: false,
          include_shared_binaries: true
        })

        {:max_heap_size, kept} = Process.info(self(), :max_heap_size)
        kept_binaries = for _ <- 1..@binaries, do: :binary.copy(<<1>>, @binary_bytes)
        send(me, {:flag, kept, kept_binaries |> Enum.map(&byte_size/1) |> Enum.sum()})
        # A collection with the binaries still referenced: the check runs at a GC.
        :erlang.garbage_collect()
        send(me, {:survived, kept_binaries |> length()})
        Process.sleep(:infinity)
      end)

    ref = Process.monitor(pid)
    {kept, referenced} = receive(do: ({:flag, kept, bytes} -> {kept, bytes}))

    outcome =
      receive do
        {:survived, _} -> :survived
        {:DOWN, ^ref, :process, ^pid, reason} -> {:killed, reason}
      after
        5_000 -> :no_answer
      end

    Process.exit(pid, :kill)
    {kept |> Map.keys() |> Enum.sort(), referenced, outcome}
  end

  def alert_cost(processes \\ 480, looks \\ 200) do
    holders =
      for _ <- 1..processes do
        payload = :binary.copy(<<2>>, 200_000)
        spawn(fn -> receive(do: (:stop -> byte_size(payload))) end)
      end

    node_figure = median_us(looks, fn -> :erlang.memory(:binary) end)
    scan = median_us(looks, fn -> top_binary(5) end)
    Enum.each(holders, &send(&1, :stop))
    {processes, node_figure, scan}
  end

  defp top_binary(n) do
    Process.list()
    |> Enum.flat_map(fn pid ->
      case Process.info(pid, :binary) do
        {:binary, bins} -> [{pid, bins |> Enum.map(&elem(&1, 1)) |> Enum.sum()}]
        nil -> []
      end
    end)
    |> Enum.sort_by(&elem(&1, 1), :desc)
    |> Enum.take(n)
  end

  defp median_us(looks, fun) do
    times = for _ <- 1..looks, do: elem(:timer.tc(fun), 0)
    times |> Enum.sort() |> Enum.at(div(looks, 2))
  end

  def report do
    {keys, referenced, outcome} = max_heap_size()
    IO.puts("max_heap_size keys kept: #{Enum.map_join(keys, ", ", &Atom.to_string/1)}")
    IO.puts("max_heap_size with #{referenced} B of binaries referenced: #{inspect(outcome)}")
    IO.puts("max_heap_size with a heap of 400000 words: #{inspect(max_heap_size_control())}")
    {n, node_figure, scan} = alert_cost()
    IO.puts("alert look, :erlang.memory(:binary): #{node_figure} us")
    IO.puts("alert look, top 5 of #{n} processes by binaries: #{scan} us")
  end
end

Prevention.report()
IO.puts("OTP #{:erlang.system_info(:otp_release)}, #{:erlang.system_info(:schedulers_online)} schedulers")
