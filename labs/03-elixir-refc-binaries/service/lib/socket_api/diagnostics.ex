defmodule SocketApi.Diagnostics do
  @moduledoc """
  The process-level tools of the recon library, for a node without Hex: the top
  processes by one attribute (recon's `proc_count/2`) and `bin_leak/1`. Call them
  from a shell attached to the node (`iex --sname shell --remsh <node>`), or over
  HTTP: `GET /debug/top?by=binary_memory&top=10` and `POST /debug/bin_leak?top=10`.

  A row names a process only by what the runtime knows about it: its pid, its
  registered name or else the function it was started with (for a GenServer, its
  module's `init/1` rather than `:proc_lib.init_p/5`, as `:proc_lib` records it), and
  the function it is running now. Nothing here knows what the service's processes
  are for.

  Binary memory is the sum of the sizes of the reference-counted binaries a process
  holds a reference to (`Process.info(pid, :binary)`), as recon and observer_cli
  count it. A binary that several processes reference is counted in each of them.
  """

  @typedoc "What `top/2` can rank by."
  @type attribute :: :binary_memory | :memory | :reductions | :message_queue_len

  @typedoc "A registered name, or else the function the process was started with."
  @type name :: atom() | mfa()

  @type row :: %{
          pid: pid(),
          name: name(),
          current_function: mfa() | :undefined,
          value: non_neg_integer()
        }

  @type leak_row :: %{
          pid: pid(),
          name: name(),
          current_function: mfa() | :undefined,
          released_bytes: integer(),
          released_refs: integer()
        }

  @attributes [:binary_memory, :memory, :reductions, :message_queue_len]

  @doc "The attributes `top/2` ranks by."
  @spec attributes() :: [attribute()]
  def attributes, do: @attributes

  @doc """
  The `n` processes with the largest `attribute`, largest first.

  `:reductions` counts since the process started, as recon's `proc_count/2` does (a
  busy process now and one that was busy an hour ago look alike).
  """
  @spec top(attribute(), pos_integer()) :: [row()]
  def top(attribute, n) when attribute in @attributes and is_integer(n) and n > 0 do
    Process.list()
    |> Enum.flat_map(&sample(&1, attribute))
    |> Enum.sort_by(& &1.value, :desc)
    |> Enum.take(n)
  end

  @doc """
  Garbage-collects every process on the node, one after the other, and returns the
  `n` processes that released the most binary memory, the most first.

  For each process: its binary references are read, it is collected
  (`:erlang.garbage_collect/1`), and they are read again. `released_bytes` is what it
  no longer references; the node frees a binary only when its last reference goes,
  so the bytes released by two processes that shared binaries add up to more than
  the node gets back (compare `:erlang.memory(:binary)` before and after).
  `released_refs` is what recon's `bin_leak/1` ranks by: the number of references
  dropped.

  An experiment, not a remedy: it stops each process for its collection, and until
  the processes fill up again the node looks healthier than it is.
  """
  @spec bin_leak(pos_integer()) :: [leak_row()]
  def bin_leak(n) when is_integer(n) and n > 0, do: Enum.take(released(), n)

  @doc """
  Rows summed per name, the most first: `{name, processes, total}` of `field`.

      SocketApi.Diagnostics.bin_leak(100_000)
      |> SocketApi.Diagnostics.sum_by_name(:released_bytes)
  """
  @spec sum_by_name([map()], atom()) :: [{name(), pos_integer(), integer()}]
  def sum_by_name(rows, field) do
    rows
    |> Enum.group_by(& &1.name, &Map.fetch!(&1, field))
    |> Enum.map(fn {name, values} -> {name, length(values), Enum.sum(values)} end)
    |> Enum.sort_by(&elem(&1, 2), :desc)
  end

  @doc "`top/2` as a JSON-ready map, for `GET /debug/top`."
  @spec top_report(attribute(), pos_integer()) :: map()
  def top_report(attribute, n) do
    %{
      "by" => Atom.to_string(attribute),
      "processes" => Enum.map(top(attribute, n), &json_row/1)
    }
  end

  @doc """
  `bin_leak/1` as a JSON-ready map, for `POST /debug/bin_leak`: the top `n` rows, the
  same summed per name over every process, and the node's memory before and after.
  """
  @spec bin_leak_report(pos_integer()) :: map()
  def bin_leak_report(n) do
    before = node_memory()
    rows = released()

    %{
      "memory_before" => before,
      "memory_after" => node_memory(),
      "processes" => rows |> Enum.take(n) |> Enum.map(&json_row/1),
      "by_name" =>
        for {name, count, bytes} <- sum_by_name(rows, :released_bytes) do
          %{"name" => format_name(name), "processes" => count, "released_bytes" => bytes}
        end
    }
  end

  @doc "Parses an attribute's name, as given in `GET /debug/top?by=...`."
  @spec attribute(binary()) :: {:ok, attribute()} | :error
  def attribute(text) do
    case Enum.find(@attributes, &(Atom.to_string(&1) == text)) do
      nil -> :error
      attribute -> {:ok, attribute}
    end
  end

  # Every process, collected one after the other, the most released first.
  defp released do
    Process.list()
    |> Enum.flat_map(&collect/1)
    |> Enum.sort_by(&{&1.released_bytes, &1.released_refs}, :desc)
  end

  # -- one process ------------------------------------------------------------------

  # Empty when the process has exited meanwhile.
  defp sample(pid, attribute) do
    case info(pid, [info_key(attribute)]) do
      nil -> []
      {row, [{_key, value}]} -> [Map.put(row, :value, measure(attribute, value))]
    end
  end

  defp collect(pid) do
    with {row, [binary: before]} <- info(pid, [:binary]),
         true <- :erlang.garbage_collect(pid),
         {:binary, later} <- Process.info(pid, :binary) do
      [
        Map.merge(row, %{
          released_bytes: binary_bytes(before) - binary_bytes(later),
          released_refs: length(before) - length(later)
        })
      ]
    else
      _exited -> []
    end
  end

  # The process's identity, and the `keys` asked for, in one call. In a list,
  # `:registered_name` is `[]` for a process without a name.
  defp info(pid, keys) do
    identity = [:registered_name, :current_function, :initial_call, :dictionary]

    case Process.info(pid, identity ++ keys) do
      nil ->
        nil

      [
        {:registered_name, registered},
        {:current_function, current},
        {:initial_call, raw},
        {:dictionary, dictionary} | asked
      ] ->
        name = if is_atom(registered), do: registered, else: started_with(raw, dictionary)
        {%{pid: pid, name: name, current_function: current}, asked}
    end
  end

  # A process started through `:proc_lib` (every GenServer, Supervisor and Task) has
  # `:proc_lib.init_p/5` as its initial call; the function it was asked to run is in
  # its dictionary, where `:proc_lib.translate_initial_call/1` finds it. That function
  # answers `:proc_lib.init_p/5` for any other process, so read the dictionary here.
  defp started_with(raw, dictionary) do
    case List.keyfind(dictionary, :"$initial_call", 0) do
      {_, {m, f, a}} when is_integer(a) -> {m, f, a}
      {_, {m, f, args}} when is_list(args) -> {m, f, length(args)}
      _ -> raw
    end
  end

  defp info_key(:binary_memory), do: :binary
  defp info_key(attribute), do: attribute

  defp measure(:binary_memory, binaries), do: binary_bytes(binaries)
  defp measure(_attribute, value), do: value

  defp binary_bytes(binaries), do: binaries |> Enum.map(&elem(&1, 1)) |> Enum.sum()

  # -- JSON -------------------------------------------------------------------------

  defp json_row(row) do
    Map.new(row, fn
      {:pid, pid} -> {"pid", inspect(pid)}
      {:name, name} -> {"name", format_name(name)}
      {:current_function, mfa} -> {"current_function", format_name(mfa)}
      {key, value} -> {Atom.to_string(key), value}
    end)
  end

  defp format_name({m, f, a}), do: Exception.format_mfa(m, f, a)
  defp format_name(name), do: inspect(name)

  defp node_memory do
    memory = :erlang.memory()
    Map.new([:total, :processes, :binary], &{Atom.to_string(&1), memory[&1]})
  end
end
