defmodule SocketApi.Introspection do
  @moduledoc """
  What the service tells about its own memory, as JSON-ready maps: the figures
  `:erlang.memory/0` gives for the node, and `Process.info/2` for each process
  (what observer_cli shows in its process table).

  A process's `memory` is its own heap, stack and message queue. The large binaries
  it refers to live outside it, on the shared binary heap; `Process.info(pid, :binary)`
  lists the ones it still holds a reference to, which is what keeps them alive.
  """

  @doc "Node memory, and the channel and connection processes summarised."
  @spec metrics() :: map()
  def metrics do
    %{
      "memory" => node_memory(),
      "channels" => summarise(channel_pids()),
      "connections" => summarise(connection_pids()),
      "process_count" => :erlang.system_info(:process_count),
      "gc" => node_gc()
    }
  end

  @doc "The `n` processes with the most memory (own plus referenced binaries)."
  @spec top_processes(pos_integer()) :: map()
  def top_processes(n) do
    kinds =
      Map.merge(kind_map(connection_pids(), "connection"), kind_map(channel_pids(), "channel"))

    rows =
      Process.list()
      |> Enum.flat_map(&row/1)
      |> Enum.sort_by(&(-&1["total_bytes"]))
      |> Enum.take(n)
      |> Enum.map(&describe(&1, kinds))

    %{"memory" => node_memory(), "processes" => rows, "allocators" => allocators()}
  end

  @doc """
  Garbage-collects every process on the node and reports memory before and after.

  An experiment, not a remedy: the difference between before and after is what a
  collection of every process gives back, at the cost of stopping every process in turn.
  """
  @spec collect_everything() :: map()
  def collect_everything do
    before = metrics()
    allocators_before = allocators()
    started = System.monotonic_time(:microsecond)
    Enum.each(Process.list(), &:erlang.garbage_collect/1)
    took = System.monotonic_time(:microsecond) - started

    %{
      "before" => before,
      "after" => metrics(),
      "gc_us" => took,
      "allocators" => %{"before" => allocators_before, "after" => allocators()}
    }
  end

  @doc """
  Where the node's memory sits, as its allocators see it, beside the RSS the OS counts.

  `:erlang.memory/0` sums the blocks in use; the OS counts the carriers those blocks
  live in (the areas each allocator took from the OS, `mbcs` for many blocks, `sbcs` for
  one large block, `mbcs_pool` for empty-enough carriers any instance may reuse), and a
  carrier goes back to the OS only when no block is left in it. Also: the bytes of the
  distinct binaries some process references, and those in port queues, so that what the
  node's binary memory holds beyond them shows.
  """
  @spec allocators() :: map()
  def allocators do
    per_allocator =
      Map.new(:erlang.system_info(:alloc_util_allocators), fn alloc ->
        {Atom.to_string(alloc), allocator_sizes(alloc)}
      end)

    sum = fn field -> per_allocator |> Map.values() |> Enum.map(& &1[field]) |> Enum.sum() end

    %{
      "rss_bytes" => rss_bytes(),
      "erlang_memory_total" => :erlang.memory(:total),
      "blocks_bytes" => sum.("blocks_bytes"),
      "carriers_bytes" => sum.("carriers_bytes"),
      "mseg_cached_carriers" => mseg_cached_carriers(),
      "per_allocator" => per_allocator,
      "binary_bytes" => :erlang.memory(:binary),
      "binary_referenced_by_processes_bytes" => binaries_referenced_by(Process.list()),
      "port_queue_bytes" => port_queue_bytes()
    }
  end

  defp node_memory do
    memory = :erlang.memory()

    %{
      "total" => memory[:total],
      "processes" => memory[:processes],
      "binary" => memory[:binary]
    }
  end

  defp channel_pids do
    for {_, pid, _, _} <- DynamicSupervisor.which_children(SocketApi.ChannelSupervisor),
        is_pid(pid),
        do: pid
  end

  defp connection_pids do
    for {pid, _} <- Registry.lookup(SocketApi.Registry, :websocket), do: pid
  end

  # What the node has spent on collecting since it started: the number of collections
  # every process ran (forced ones included), the words they reclaimed, and the node's
  # reductions (work done by all processes, collections included).
  defp node_gc do
    {count, reclaimed, _} = :erlang.statistics(:garbage_collection)
    {reductions, _} = :erlang.statistics(:reductions)
    %{"count" => count, "words_reclaimed" => reclaimed, "reductions" => reductions}
  end

  defp kind_map(pids, kind), do: Map.new(pids, &{&1, kind})

  # The per-process figures a leak hunt needs; empty when the process has exited.
  defp row(pid) do
    case Process.info(pid, [:memory, :binary, :message_queue_len]) do
      nil ->
        []

      info ->
        binary_bytes = info[:binary] |> Enum.map(fn {_id, size, _refc} -> size end) |> Enum.sum()

        [
          %{
            "pid" => pid,
            "memory_bytes" => info[:memory],
            "binary_bytes" => binary_bytes,
            "binary_refs" => length(info[:binary]),
            "total_bytes" => info[:memory] + binary_bytes,
            "message_queue_len" => info[:message_queue_len]
          }
        ]
    end
  end

  defp describe(row, kinds) do
    pid = row["pid"]

    name =
      case Process.info(pid, :registered_name) do
        {:registered_name, name} when is_atom(name) and name != [] -> inspect(name)
        _ -> pid |> :proc_lib.translate_initial_call() |> format_mfa()
      end

    %{row | "pid" => inspect(pid)}
    |> Map.put("kind", Map.get(kinds, pid, "other"))
    |> Map.put("name", name)
    |> Map.put("gc", gc_info(pid))
  end

  # When the process collects next, and what a collection would find: the young and
  # old heaps, the binaries referenced from each (the "virtual binary heap") and the
  # size that triggers a collection, all in words; the minor collections since the
  # last full sweep, and how many may run before the next one.
  @gc_info_keys [
    :heap_block_size,
    :old_heap_block_size,
    :bin_vheap_size,
    :bin_vheap_block_size,
    :bin_old_vheap_size,
    :bin_old_vheap_block_size
  ]

  defp gc_info(pid) do
    case Process.info(pid, [:garbage_collection_info, :garbage_collection]) do
      [garbage_collection_info: info, garbage_collection: gc] ->
        info
        |> Keyword.take(@gc_info_keys)
        |> Keyword.merge(Keyword.take(gc, [:minor_gcs, :fullsweep_after]))
        |> Map.new()

      nil ->
        %{}
    end
  end

  # One allocator's blocks in use and carriers, summed over its instances, per kind of
  # carrier; `false` when the allocator is disabled.
  defp allocator_sizes(alloc) do
    instances =
      case :erlang.system_info({:allocator_sizes, alloc}) do
        list when is_list(list) -> for {:instance, _, info} <- list, do: info
        _ -> []
      end

    kinds =
      Map.new(["mbcs", "sbcs", "mbcs_pool"], fn kind ->
        key = String.to_existing_atom(kind)
        parts = for info <- instances, part = info[key], part != nil, do: part

        {kind,
         %{
           "blocks_bytes" => parts |> Enum.map(&blocks_bytes/1) |> Enum.sum(),
           "carriers_bytes" => parts |> Enum.map(&carriers_bytes/1) |> Enum.sum()
         }}
      end)

    total = fn field -> kinds |> Map.values() |> Enum.map(& &1[field]) |> Enum.sum() end

    Map.merge(kinds, %{
      "blocks_bytes" => total.("blocks_bytes"),
      "carriers_bytes" => total.("carriers_bytes")
    })
  end

  # Each figure is a tuple whose second element is the current value: {size, current,
  # max since the last call, max}, or {carriers_size, current} in the pool.
  defp blocks_bytes(part) do
    {:blocks, per_type} = List.keyfind(part, :blocks, 0, {:blocks, []})

    for {_type, figures} <- per_type, figure <- figures, elem(figure, 0) == :size, reduce: 0 do
      acc -> acc + elem(figure, 1)
    end
  end

  defp carriers_bytes(part) do
    case List.keyfind(part, :carriers_size, 0) do
      nil -> 0
      tuple -> elem(tuple, 1)
    end
  end

  # Freed carriers mseg_alloc keeps for reuse instead of returning them to the OS.
  defp mseg_cached_carriers do
    case :erlang.system_info({:allocator, :mseg_alloc}) do
      list when is_list(list) ->
        for {:instance, _, info} <- list,
            {:memkind, memkind} <- info,
            {:status, status} <- memkind,
            {:cached_segments, n} <- status,
            reduce: 0 do
          acc -> acc + n
        end

      _ ->
        0
    end
  end

  defp rss_bytes do
    with {:ok, status} <- File.read("/proc/self/status"),
         [_, kb] <- Regex.run(~r/^VmRSS:\s+(\d+) kB$/m, status) do
      String.to_integer(kb) * 1024
    else
      _ -> nil
    end
  end

  @doc false
  # The bytes of the distinct binaries `pids` reference: each binary counted once,
  # however many of them reference it.
  @spec binaries_referenced_by([pid()]) :: non_neg_integer()
  def binaries_referenced_by(pids) do
    pids
    |> Enum.flat_map(fn pid ->
      case Process.info(pid, :binary) do
        {:binary, binaries} -> binaries
        nil -> []
      end
    end)
    |> Enum.uniq_by(fn {id, _size, _refc} -> id end)
    |> Enum.map(fn {_id, size, _refc} -> size end)
    |> Enum.sum()
  end

  defp port_queue_bytes do
    for port <- Port.list(),
        {:queue_size, n} <- [:erlang.port_info(port, :queue_size)],
        reduce: 0 do
      acc -> acc + n
    end
  end

  defp format_mfa({m, f, a}), do: Exception.format_mfa(m, f, a)

  defp summarise(pids) do
    rows = Enum.flat_map(pids, &row/1)
    count = length(rows)
    memory = rows |> Enum.map(& &1["memory_bytes"]) |> Enum.sum()
    binary = rows |> Enum.map(& &1["binary_bytes"]) |> Enum.sum()

    %{
      "count" => count,
      "memory_bytes" => memory,
      "binary_bytes" => binary,
      "avg_bytes" => if(count > 0, do: div(memory + binary, count), else: 0),
      "max_bytes" => rows |> Enum.map(& &1["total_bytes"]) |> Enum.max(fn -> 0 end)
    }
  end
end
