#!/usr/bin/env bash
# Lab 03, steps 2 to 4, as a script: the README's remote-shell commands, run on the
# broken service (started by hand, as the README does) while the README's 40-user
# load is connected, printed as an iex transcript the README can quote.
#
#   flock /tmp/leaklab-measure.lock solutions/03-elixir-refc-binaries/remote_session.sh
#
# Run it from the repository root. Needs elixir (with cowlib and jiffy: scripts/setup-elixir),
# go (the load's toolchain), curl and python3 (to pick a free port).
set -euo pipefail

LAB=labs/03-elixir-refc-binaries
CLIENTS=40
RATE=4
# The README's figures were printed this long after the 40th client connected.
AFTER_LAST_S=6

die() { echo "remote_session: $*" >&2; exit 1; }

[[ -d $LAB/service && -d $LAB/load ]] || die "run me from the repository root (no $LAB here)"
ROOT=$(pwd)
TMP=$(mktemp -d /tmp/remote_session.XXXXXX)
SERVICE_PG=""
LOAD_PG=""

# Stop a process group: TERM first (the BEAM then runs init:stop, the load exits 1),
# KILL whatever is left after a grace period, so no beam.smp outlives the script.
stop_group() {
  local pg=$1 what=$2
  [[ -n $pg ]] || return 0
  kill -0 -- "-$pg" 2>/dev/null || return 0
  kill -TERM -- "-$pg" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 -- "-$pg" 2>/dev/null || return 0
    sleep 0.1
  done
  echo "remote_session: $what did not stop on TERM within 10 s, killing it" >&2
  kill -KILL -- "-$pg" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_group "$LOAD_PG" "the load"
  stop_group "$SERVICE_PG" "the service"
  if [[ $rc -ne 0 ]]; then
    echo "remote_session: FAILED (exit $rc); last lines of the service's and the load's logs:" >&2
    tail -n 20 "$TMP/service.log" 2>/dev/null | sed 's/^/  service| /' >&2 || true
    tail -n 5 "$TMP/load.out" "$TMP/load.err" 2>/dev/null | sed 's/^/  load| /' >&2 || true
  fi
  rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT
# A signal ends the script through the EXIT trap, with the conventional status.
trap 'exit 130' INT
trap 'exit 143' TERM

started=$(date +%s)

# 1. The service, as the README starts it by hand, on a free loopback port. Compile
#    first, so that the start-up wait below measures the start, not the build.
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$LAB/service" && mix compile >"$TMP/compile.log" 2>&1) \
  || { cat "$TMP/compile.log" >&2; die "mix compile failed"; }

# setsid: the node gets a process group of its own, so cleanup can stop it and all it
# spawned (beam.smp, erl_child_setup) without touching anything else.
(cd "$LAB/service" && SOCKET_API_PORT=$PORT exec setsid elixir --sname "socket_api_$PORT" -S mix run --no-halt) \
  </dev/null >"$TMP/service.log" 2>&1 &
SERVICE_PG=$!

for i in $(seq 1 300); do
  curl -fsS -o /dev/null "http://127.0.0.1:$PORT/healthz" 2>/dev/null && break
  kill -0 "$SERVICE_PG" 2>/dev/null || die "the service exited before answering /healthz"
  [[ $i -lt 300 ]] || die "no answer from http://127.0.0.1:$PORT/healthz within 30 s"
  sleep 0.1
done
echo "# service: node socket_api_$PORT, http://127.0.0.1:$PORT, ready $(( $(date +%s) - started )) s after the script started" >&2

# 2. The README's load. It prints one JSON progress line a second (t_s and cumulative
#    counts), which tells us when its clock started and when everyone is in.
export GOTOOLCHAIN=go1.27.3
(cd "$LAB/load" && exec setsid go run . -url "http://127.0.0.1:$PORT" -clients "$CLIENTS" -rate "$RATE" -duration 60s) \
  </dev/null >"$TMP/load.out" 2>"$TMP/load.err" &
LOAD_PG=$!

# field NAME LINE: one integer or number field of a progress line.
field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$2"; }

# The pacer starts client n (0-based) when its clock reaches (n+1)/rate, so the last
# one connects at clients/rate s of load time (10 s here): the probe runs at that
# plus AFTER_LAST_S, measured on the load's own clock, once the last progress line
# says every client connected and got its three replies. `go run` may spend a while
# building first, hence the load's clock, not ours.
target_t=$(python3 -c "print($CLIENTS / $RATE + $AFTER_LAST_S)")
load_t0=""
deadline=$(( $(date +%s) + 180 ))
while :; do
  kill -0 "$LOAD_PG" 2>/dev/null || die "the load exited early"
  [[ $(date +%s) -lt $deadline ]] || die "the load did not get all $CLIENTS clients connected and answered in time"
  line=$(grep '"t_s"' "$TMP/load.out" 2>/dev/null | grep -v disturb_s | tail -n 1 || true)
  if [[ -n $line ]]; then
    now=$(date +%s.%N)
    # The first progress line we see fixes the load's t=0 on our clock (to within
    # the 0.1 s poll).
    [[ -n $load_t0 ]] || load_t0=$(python3 -c "print($now - $(field t_s "$line"))")
    connected=$(field connected "$line"); ok=$(field ok "$line"); errors=$(field errors "$line")
    [[ ${errors:-0} -eq 0 ]] || die "the load reports $errors errors: $line"
    if [[ ${connected:-0} -ge $CLIENTS && ${ok:-0} -ge $(( CLIENTS * 3 )) ]] \
      && python3 -c "import sys; sys.exit(0 if $now - $load_t0 >= $target_t else 1)"; then
      break
    fi
  fi
  sleep 0.1
done
echo "# load: $connected clients connected, $ok replies ok, $errors errors; probe at load t=$(python3 -c "print(round($(date +%s.%N) - $load_t0, 1))") s" >&2

# 3. The README's step 2, 3 and 4 commands, verbatim, one per entry, evaluated in order
#    on the service's node from a hidden node (it does not show in Node.list/0 there),
#    carrying the binding from one to the next as a shell would.
cat >"$TMP/probe.exs" <<'EOF'
commands = [
  # Step 2
  ":erlang.memory() |> Keyword.take([:total, :processes, :binary])",
  "SocketApi.Diagnostics.top(:binary_memory, 5)",
  "SocketApi.Diagnostics.top(:memory, 5)",
  "SocketApi.Diagnostics.top(:binary_memory, 200) |> SocketApi.Diagnostics.sum_by_name(:value)",
  # Step 3
  ":erlang.memory(:binary)",
  "released = SocketApi.Diagnostics.bin_leak(100_000); length(released)",
  "Enum.take(released, 5)",
  "SocketApi.Diagnostics.sum_by_name(released, :released_bytes) |> Enum.take(4)",
  ":erlang.memory(:binary)",
  # Step 4
  "SocketApi.Diagnostics.top(:binary_memory, 3)",
  "pid = SocketApi.Diagnostics.top(:binary_memory, 1) |> hd() |> Map.fetch!(:pid)",
  "state = :sys.get_state(pid)",
  """
  binaries = fn
    _f, b when is_binary(b) -> [{byte_size(b), :binary.referenced_byte_size(b)}]
    f, m when is_map(m) -> Enum.flat_map(Map.to_list(m), &f.(f, &1))
    f, t when is_tuple(t) -> Enum.flat_map(Tuple.to_list(t), &f.(f, &1))
    f, [h | t] -> f.(f, h) ++ f.(f, t)
    _f, _ -> []
  end
  """,
  "found = binaries.(binaries, state)",
  "{length(found), found |> Enum.map(&elem(&1, 0)) |> Enum.sum(), found |> Enum.map(&elem(&1, 1)) |> Enum.sum()}"
]

# The formatter runs on the service's node too, so pids print as its own shell prints
# them (#PID<0.189.0>, not the remote #PID<12345.189.0>). A list or map of more than
# 5 entries, at any depth, prints its first 5 and "... N more (M in all)".
formatter = ~S"""
# Lists and maps of more than 5 entries keep their first 5 and a marker, which the
# text then shows as "... N more"; tuples (rows, mfas) are never cut.
proper = fn l -> try do {:ok, length(l)} rescue ArgumentError -> :improper end end
marker = fn cut, all -> :"__more_#{cut}_of_#{all}__" end
trim = fn
  f, l when is_list(l) ->
    case proper.(l) do
      {:ok, n} when n > 5 -> Enum.map(Enum.take(l, 5), &f.(f, &1)) ++ [marker.(n - 5, n)]
      {:ok, _} -> Enum.map(l, &f.(f, &1))
      :improper -> l
    end
  f, m when is_map(m) and not is_struct(m) ->
    entries = m |> Map.to_list() |> Enum.sort() |> Enum.map(fn {k, v} -> {f.(f, k), f.(f, v)} end)
    if map_size(m) > 5,
      do: Map.new([{marker.(map_size(m) - 5, map_size(m)), nil} | Enum.take(entries, 5)]),
      else: Map.new(entries)
  f, t when is_tuple(t) -> t |> Tuple.to_list() |> Enum.map(&f.(f, &1)) |> List.to_tuple()
  _f, x -> x
end
text = inspect(trim.(trim, value), pretty: true, width: 98, limit: :infinity)
Regex.replace(~r/:?__more_(\d+)_of_(\d+)__(: nil| => nil)?/, text, "... \\1 more (\\2 in all)")
"""

[host] = node() |> Atom.to_string() |> String.split("@") |> tl()
target = :"socket_api_#{System.fetch_env!("PORT")}@#{host}"
Node.connect(target) || (IO.puts(:stderr, "probe: cannot connect to #{target}"); System.halt(2))

prompt = fn cmd ->
  [first | rest] = String.split(cmd, "\n")
  Enum.join(["iex> " <> first | Enum.map(rest, &("...> " <> &1))], "\n")
end

# The commands run one after the other in one process on the service's node, as in a
# remote shell, so that their binding never leaves it: a term that crossed the
# distribution to this node and back would come back re-encoded (a 40-byte slice of a
# document, for one, as a 40-byte binary of its own), which is not what a shell sees.
runner = ~S"""
Enum.map_reduce(commands, [], fn cmd, binding ->
  {value, binding} = Code.eval_string(cmd, binding)
  {text, _} = Code.eval_string(formatter, value: value)
  {text, binding}
end)
|> elem(0)
"""

# :sys.get_state/1 waits up to 5 s, bin_leak collects every process: 120 s is ample.
case :rpc.call(target, Code, :eval_string, [runner, [commands: commands, formatter: formatter]], 120_000) do
  {texts, _} when is_list(texts) ->
    commands
    |> Enum.zip(texts)
    |> Enum.each(fn {cmd, text} ->
      IO.puts(prompt.(String.trim_trailing(cmd)))
      IO.puts(text)
    end)

  other ->
    IO.puts(:stderr, "probe: the commands failed on #{target}: #{inspect(other, pretty: true)}")
    System.halt(3)
end
EOF

# --hidden: the probe does not join the service's cluster view; its own short name
# shares the service's host part, so the two reach each other through epmd.
PORT=$PORT elixir --sname "probe_$$" --hidden "$TMP/probe.exs" || die "the probe failed (exit $?)"

# 4. The load is still connected here; cleanup stops it and the node.
echo "# done in $(( $(date +%s) - started )) s" >&2
