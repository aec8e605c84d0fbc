"""One run, start to finish (DESIGN.md section 3).

build -> start the aux processes (`[[aux]]`, each on its own free port, each waited
for) -> start the service in its own process group -> wait for readiness -> sample ->
drive the bounded load -> optional idle -> snapshots -> stop everything -> write the
dataset atomically. Every exit path (success, error, Ctrl-C) stops every child; only
a complete run writes a dataset.

A lab without `[load]` has a self-driving service: a client program that does its work
against the aux processes and exits. It is started at t_s = 0 like a load program, its
stdout is the load program's progress protocol, its RSS is `rss_bytes`, and the run
ends when it exits (a non-zero exit, or no final `"done"` line, fails the run).
"""

from __future__ import annotations

import contextlib
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import psutil

from leaklab import dataset, memlimit
from leaklab.build import Built, build_load, build_variant, tail, tools_dir
from leaklab.doctor import install_hint
from leaklab.errors import LeakLabError
from leaklab.limit import describe_size
from leaklab.live import Frame, LiveView
from leaklab.load import LoadProgram, LoadResult
from leaklab.memlimit import Cgroup
from leaklab.paths import work_dir
from leaklab.procs import (
    LOOPBACK,
    Ledger,
    Probe,
    ProcessGroup,
    free_port,
    ledger_folder,
    port_in_use,
    reap,
    run_captured,
    wait_ready,
)
from leaklab.progress import figures
from leaklab.samplers import (
    JsonlTail,
    Recorder,
    Sampler,
    cpu_poll,
    http_json_poll,
    rss_poll,
    tree_rss,
)
from leaklab.sequential import Watch, plan
from leaklab.spec import Aux, Lab, Ready, Snapshot, fill
from leaklab.variants import UNORDERED

SERIES_FILE_ENV = "LEAKLAB_SERIES_FILE"


@dataclass(frozen=True)
class RunOptions:
    """What the user chose for this run; anything unset comes from lab.toml."""

    variant: str = "broken"
    params: dict[str, str] | None = None
    port: int | None = None
    idle_s: float | None = None
    # lab.toml's [[snapshots]] after the load (profiles, histograms); a grade skips them:
    # its verdict and checks read only the series and the load's counts.
    snapshots: bool = True
    dest: Path | None = None  # folder for the dataset; default .leaklab/runs/<slug>
    name: str | None = None  # dataset name; default the variant
    order: int = UNORDERED
    # Look at the verdict every few seconds and stop the load once it is decided
    # (`leaklab.sequential`); off for captures, which publish the whole run.
    adaptive: bool = False
    # A self-driving client's run is also cut short (a grade, always the standard
    # workload); `leaklab run` shows it whole: its drain, a burst, `--linger-s`.
    adaptive_self_driving: bool = False
    extras: tuple[str, ...] = ()  # `[build.extras]` steps to build too (`--with`)
    # A grade runs the tree its gate built and tested: the learner's with the course's
    # tests in place of their own (`materialise`). The service is the same either way;
    # one tree is one build, where two cost a second sbt build per grade.
    course_tests: bool = False
    # `--memory-limit`: the service runs in a memory cgroup of this many bytes
    # (`leaklab.memlimit`); an OOM kill ends the run and is recorded, not an error.
    memory_limit: int | None = None


@dataclass(frozen=True)
class RunResult:
    csv: Path
    json: Path
    data: dataset.Dataset


def run(lab: Lab, opts: RunOptions, log: Callable[[str], None] = print) -> RunResult:
    lab = lab.for_variant(opts.variant)  # an implementation's own build and service
    reap_leftovers(lab.root, log)
    with Ledger(ledger_folder(lab.root) / f"{os.getpid()}.json") as ledger:
        setup = prepare(lab, opts, log)
        try:
            measured = _measure(setup, ledger)
            return _write(setup, measured, ledger)
        except KeyboardInterrupt:
            # An interrupted run writes nothing, its log folder included. A failed run
            # keeps its logs: its error message quotes them and names where they are.
            shutil.rmtree(setup.run_dir, ignore_errors=True)
            raise


def reap_leftovers(root: Path, log: Callable[[str], None]) -> None:
    """Stop what an earlier harness, killed with SIGKILL, left running (its pid file)."""
    if reaped := reap(ledger_folder(root)):
        log(f"stopped {len(reaped)} process group(s) a killed run left: {'; '.join(reaped)}")


@dataclass(frozen=True)
class Setup:
    """A run once its variant is built: the lab as the variant runs it, the parameters,
    the placeholder values every command is rendered with, and the run's log folder."""

    lab: Lab
    opts: RunOptions
    params: dict[str, str]
    built: Built
    load_built: Built | None
    values: dict[str, str]
    log: Callable[[str], None]
    driving: Driving

    @property
    def run_dir(self) -> Path:
        return Path(self.values["run_dir"])

    @property
    def artefacts(self) -> Path:
        return Path(self.values["artefacts"])

    @property
    def duration_s(self) -> float:
        return self.driving.duration_s(self.lab, self.params)


def prepare(
    lab: Lab, opts: RunOptions, log: Callable[[str], None], with_load: bool = True
) -> Setup:
    """Build the variant (and the load), choose the ports, make the run's log folder."""
    params = {**lab.params, **(opts.params or {})}
    driving = driving_for(lab)
    driving.duration_s(lab, params)  # a bad --duration fails before a long build, not after
    built = build_variant(
        lab, opts.variant, log, course_tests=opts.course_tests, extras=opts.extras
    )
    load_built = build_load(lab, log) if with_load and driving.listens else None
    port = opts.port or free_port()
    if opts.port and port_in_use(port):
        raise LeakLabError(f"port {port} on {LOOPBACK} is in use", "omit --port to pick a free one")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    run_dir = work_dir(lab.root) / "runs" / lab.slug / "logs" / f"{stamp}-{opts.variant}"
    (run_dir / "artefacts").mkdir(parents=True)
    values = {
        **params,
        "port": str(port),
        "url": f"http://{LOOPBACK}:{port}",
        "build": str(built.out),
        "src": str(built.src),
        "load": str(load_built.out) if load_built else "",
        "run_dir": str(run_dir),
        "artefacts": str(run_dir / "artefacts"),
        "tools": tools_dir(lab),
    }
    for aux in lab.aux:
        aux_port = free_port()
        values[f"{aux.name}_port"] = str(aux_port)
        values[f"{aux.name}_url"] = f"http://{LOOPBACK}:{aux_port}"
    return Setup(lab, opts, params, built, load_built, values, log, driving)


@contextlib.contextmanager
def serving(
    lab: Lab, variant: str = "broken", log: Callable[[str], None] = print
) -> Iterator[tuple[Setup, Serving]]:
    """A variant's aux processes and listening service, built and started as a run
    starts them, kept up for the block (no load, no samplers): for probing a service
    from outside, as the fuzz test does. Everything stops when the block ends."""
    lab = lab.for_variant(variant)
    reap_leftovers(lab.root, log)
    with Ledger(ledger_folder(lab.root) / f"{os.getpid()}.json") as ledger:
        setup = prepare(lab, RunOptions(variant), log, with_load=False)
        with ProcessGroup(ledger=ledger) as group:
            yield setup, start_serving(setup, group)


@dataclass
class Serving:
    """The processes a run keeps up: its aux processes, then the listening service
    (none for a self-driving lab, whose service is started as the load)."""

    watched: list[_Watched]
    aux_argvs: dict[str, list[str]]
    service_argv: list[str]
    env: dict[str, str]
    service: subprocess.Popen[bytes] | None = None
    ready_s: float = 0.0
    cgroup: Cgroup | None = None  # the memory cgroup the service runs in, if any

    @property
    def launch_argv(self) -> list[str]:
        """The service's command as started: inside its memory cgroup, if it has one."""
        return self.cgroup.wrap(self.service_argv) if self.cgroup else self.service_argv


def start_serving(setup: Setup, group: ProcessGroup, cgroup: Cgroup | None = None) -> Serving:
    """Start every aux process, then (for a listening service) the service, each waited
    for until its readiness probe answers; they stop with `group`."""
    lab, values = setup.lab, setup.values
    env = {
        **lab.service.command.render_env(values),
        SERIES_FILE_ENV: str(setup.run_dir / "series.jsonl"),
    }
    serving = Serving([], {}, lab.service.command.render(values), env, cgroup=cgroup)
    for aux in lab.aux:
        serving.aux_argvs[aux.name] = aux.command.render(values)
        serving.watched.append(_start_aux(setup, group, aux, serving.aux_argvs[aux.name]))
    if setup.driving.listens:
        serving.service, serving.ready_s = _start_service(setup, group, serving)
        log = setup.run_dir / "service.log"
        serving.watched.append(_Watched("the service", serving.service, log, None))
    return serving


def _start_aux(setup: Setup, group: ProcessGroup, aux: Aux, argv: list[str]) -> _Watched:
    values = setup.values
    aux_log = setup.run_dir / f"{aux.name}.log"
    _require(argv)
    with aux_log.open("ab") as sink:
        child = group.start(
            argv,
            cwd=setup.built.src,
            env=aux.command.render_env(values),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    probe = probe_for(aux.ready, values[f"{aux.name}_url"], int(values[f"{aux.name}_port"]))
    took = wait_ready(child, probe, lambda: tail(aux_log), what=f"the {aux.name} (aux)")
    setup.log(f"{aux.name} ready in {took:.1f} s (pid {child.pid})")
    return _Watched(f"the {aux.name} (aux)", child, aux_log, aux.name)


def _start_service(
    setup: Setup, group: ProcessGroup, serving: Serving
) -> tuple[subprocess.Popen[bytes], float]:
    ready = setup.lab.service.ready
    service_log = setup.run_dir / "service.log"
    _require(serving.service_argv)
    with service_log.open("ab") as sink:
        service = group.start(
            serving.launch_argv,
            cwd=setup.built.src,
            env=serving.env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    url = setup.values["url"]
    probe = probe_for(ready, url, int(setup.values["port"]))
    ready_s = wait_ready(service, probe, lambda: tail(service_log))
    setup.log(f"service ready in {ready_s:.1f} s on {url} (pid {service.pid})")
    return service, ready_s


def probe_for(ready: Ready, base_url: str, port: int) -> Probe:
    """A lab.toml `ready` table as a probe of a process listening on `port`."""
    url = f"{base_url}{ready.http}" if ready.http else None
    return Probe(port, url, ready.timeout_s, enabled=bool(ready.http or ready.tcp))


def _require(argv: list[str]) -> None:
    """A program that is not on PATH is a missing tool (java, mix), not a missing build:
    name it and say how to install it."""
    program = argv[0]
    if os.sep not in program and shutil.which(program) is None:
        raise LeakLabError(
            f"cannot start {program}: it is not installed (not found on PATH)",
            f"{install_hint(program)}; `leaklab doctor` says which labs need what",
        )


@dataclass
class Measured:
    """What the run measured: the samples, the load's report, and when the load ran."""

    serving: Serving
    recorder: Recorder
    result: LoadResult
    load_argv: list[str] | None
    t0: float
    t_load_end: float
    watch: Watch | None = None
    # Under --memory-limit: seconds of load at which the OOM killer ended the service.
    oom_kill_s: float | None = None
    sending_end_s: float | None = None  # when the load stopped sending (the window's end)
    machine: dict[str, float] | None = None  # how busy the machine was (`machine_busy`)


def _measure(setup: Setup, ledger: Ledger) -> Measured:
    """Start everything, sample, drive the load, idle, take the snapshots, stop
    everything (on every path), then check that the load did what it was asked."""
    recorder, origin = Recorder(), Origin()
    with _memory_cgroup(setup) as cgroup, ProcessGroup(ledger=ledger) as group:
        serving = start_serving(setup, group, cgroup)
        load = LoadProgram(group, recorder)
        samplers = make_samplers(setup, recorder, serving, load, origin)
        for s in samplers:
            s.start()
        try:
            measured = _drive(setup, serving, load, recorder, origin)
            if measured.oom_kill_s is not None:
                return measured  # a kill is the result: no service left to check or snapshot
            _check_alive(serving.watched)
            setup.driving.check(setup, measured.result)
            if setup.opts.snapshots:
                pid = serving.service.pid if serving.service else (load.last_pid or 0)
                _take_snapshots(setup, group, pid)
        finally:
            _stop_samplers(samplers)
        if serving.service is not None:
            group.stop(serving.service)
    return measured


@contextlib.contextmanager
def _memory_cgroup(setup: Setup) -> Iterator[Cgroup | None]:
    """The run's memory cgroup under --memory-limit; removed once the run is over. Where
    the machine gives none, one line says so and the run goes on without the limit."""
    size = setup.opts.memory_limit
    if size is None:
        yield None
        return
    cgroup, why = memlimit.create(size, memlimit.group_name())
    if cgroup is None:
        setup.log(f"no writable memory cgroup here ({why}): running without the limit")
        yield None
        return
    setup.log(f"the service runs under a {describe_size(size)} memory limit ({cgroup.path})")
    try:
        yield cgroup
    finally:
        cgroup.remove()


def _oom_killed(serving: Serving, t0: float) -> float | None:
    """Seconds since load start, once the OOM killer has ended the service; else None."""
    if serving.cgroup is None or serving.cgroup.oom_kills() == 0:
        return None
    return round(time.monotonic() - t0, 3)


def _service_pid(setup: Setup, serving: Serving, load: LoadProgram) -> Callable[[], int | None]:
    return lambda: setup.driving.service_pid(serving, load)


def _stop_samplers(samplers: list[Sampler], wait_s: float = 5.0) -> None:
    """Stop every sampler at once, with one shared wait: a poll blocked on a service
    that no longer answers (daemon threads) must not hold up the end of a run."""
    for s in samplers:
        s.stop_soon()
    deadline = time.monotonic() + wait_s
    for s in samplers:
        s.join(timeout=max(0.0, deadline - time.monotonic()))
    for s in samplers:
        if isinstance(s.poll, JsonlTail):
            s.poll()  # the lines written after the last scheduled poll


def _drive(
    setup: Setup, serving: Serving, load: LoadProgram, recorder: Recorder, origin: Origin
) -> Measured:
    """Start the load (or the self-driving service) at t_s = 0 and watch it to its end
    (an adaptive run ends it at the first look that decides the verdict), then idle;
    every aux and the service must stay up throughout."""
    lab = setup.lab
    load_argv, t0, deadline = setup.driving.start(setup, serving, load, origin)
    before = _machine_now()
    watch = _watch_for(setup)
    # A self-driving client drains its backlog after sending (lab 02's broken one for
    # ~40 s), and the drain is not part of the verdict window: its last look is taken
    # when the sending ends, and the drain is then cut short.
    final_in_loop = not setup.driving.listens
    a = lab.analysis
    frame = Frame(
        f"{lab.slug} {setup.opts.variant}",
        a.verdict_series,
        a.warmup_s,
        setup.duration_s,
        a.grows_above,
        a.flat_below,
        elapsed_s=0.0,
        adaptive=watch is not None,
    )
    shown = lambda: figures(recorder, a.series, load.result.final or load.result.last)  # noqa: E731
    killed_s: float | None = None
    with LiveView(frame, recorder, t0, setup.run_dir, watch, shown) as view:
        setup = replace(setup, log=view.logger(setup.log))
        while load.running() and time.monotonic() < deadline:
            if (killed_s := _oom_killed(serving, t0)) is not None:
                setup.log(f"the service was OOM-killed at {killed_s:.1f} s of load")
                load.ask_to_stop()
                break
            _check_alive(serving.watched)
            if watch is not None and watch.due(time.monotonic() - t0, final_in_loop):
                _look(setup, watch, recorder, t0, load)
            view.update()  # after the look: a plain line at a look shows its verdict
            time.sleep(0.25)
        result = load.finish(deadline)
        t_load_end = time.monotonic()
        if killed_s is None and (killed_s := _oom_killed(serving, t0)) is not None:
            setup.log(f"the service was OOM-killed at {killed_s:.1f} s of load")
        sending_s = sending_ended_s(setup, result, t0, t_load_end - t0)
        end_s = setup.driving.phases(setup, result.final, sending_s)["load_s"]
        if killed_s is not None:
            end_s = min(end_s, killed_s)  # the steady window ends at the kill
        if watch is not None and not watch.finished:
            setup.log(str(watch.last_look(recorder.snapshot(), t0, end_s)))
        view.update(window_end_s=end_s, force=True)
        idle_end = t_load_end + (setup.driving.idle_s(setup) if killed_s is None else 0.0)
        while time.monotonic() < idle_end:
            _check_alive(serving.watched)
            view.update(window_end_s=end_s)
            time.sleep(0.25)
    machine = _machine_busy(before, _machine_now())
    return Measured(
        serving, recorder, result, load_argv, t0, t_load_end, watch, killed_s, sending_s, machine
    )


def _machine_now() -> tuple[tuple[float, float, float], Any]:
    return os.getloadavg(), psutil.cpu_times()


def _machine_busy(
    before: tuple[tuple[float, float, float], Any], after: tuple[tuple[float, float, float], Any]
) -> dict[str, float]:
    """How busy the machine was while the load ran: the 1-minute load average at its
    start and end (per core too), and the share of CPU time the hypervisor stole."""
    (load0, times0), (load1, times1) = before, after
    total = sum(times1) - sum(times0)
    steal = getattr(times1, "steal", 0.0) - getattr(times0, "steal", 0.0)
    cpus = os.cpu_count() or 1
    return {
        "cpus": cpus,
        "load_avg_1m_start": round(load0[0], 2),
        "load_avg_1m_end": round(load1[0], 2),
        "load_per_cpu": round(max(load0[0], load1[0]) / cpus, 2),
        "cpu_steal_pct": round(100 * steal / total, 2) if total > 0 else 0.0,
    }


def sending_ended_s(setup: Setup, result: LoadResult, t0: float, exited_s: float) -> float:
    """When a load program stopped sending, in seconds since load start: at the end of
    its duration, or when the harness asked it to stop, or when it exited, whichever came
    first. The steady window ends there, not at its exit: what a load does after sending
    (lab 03's node-wide GC and disconnect, lab 04's class histogram) is not the service
    under load. A self-driving client says itself when its load ended (`load_end_s`)."""
    if not setup.driving.listens:
        return exited_s
    ends = [exited_s, setup.duration_s]
    if result.stop_asked_at is not None:
        ends.append(result.stop_asked_at - t0)
    return round(min(ends), 3)


def _watch_for(setup: Setup) -> Watch | None:
    """The looks of an adaptive run. A load program stops on SIGTERM once a look decides;
    so does a self-driving client (and it cuts the drain of its backlog), but only where
    the workload is the standard one: in a grade (`adaptive_self_driving`)."""
    opts = setup.opts
    if not opts.adaptive or not (setup.driving.listens or opts.adaptive_self_driving):
        return None
    a = setup.lab.analysis
    return Watch(a, plan(a.warmup_s, setup.duration_s, a.look_every_s))


def _look(setup: Setup, watch: Watch, recorder: Recorder, t0: float, load: LoadProgram) -> None:
    """One look; the load stops once the looks are over (one decided, or the last one,
    taken in the run for a self-driving client, was taken)."""
    decision = watch.look(recorder.snapshot(), t0)
    if watch.finished:
        setup.log(f"{decision}: stopping the load")
        load.ask_to_stop()
    else:
        setup.log(str(decision))


def _write(setup: Setup, measured: Measured, ledger: Ledger) -> RunResult:
    """The dataset: the samples in seconds since load start, and the provenance."""
    lab, t0 = setup.lab, measured.t0
    rows = [(at - t0, series, value) for at, series, value in measured.recorder.snapshot()]
    ended_s = round(measured.t_load_end - t0, 3)
    phases = {
        **setup.driving.phases(setup, measured.result.final, ended_s),
        "idle_s": setup.driving.idle_s(setup),
        "warmup_s": lab.analysis.warmup_s,
    }
    if setup.driving.listens and measured.sending_end_s is not None:
        phases["load_exit_s"] = ended_s  # the load program's exit, after its post-run actions
        phases["load_s"] = min(phases["load_s"], measured.sending_end_s)
    if measured.oom_kill_s is not None:  # the steady window ends at the kill
        phases["load_s"] = min(phases["load_s"], measured.oom_kill_s)
        phases["idle_s"] = 0.0
    meta = _provenance(setup, measured, phases, ledger)
    if setup.opts.memory_limit is not None:
        cgroup = measured.serving.cgroup
        meta["memory_limit"] = {
            "bytes": setup.opts.memory_limit,
            "applied": cgroup is not None,
            "cgroup": f"v{cgroup.version} {cgroup.path}" if cgroup else None,
            "oom_kill_s": measured.oom_kill_s,
        }
    opts = setup.opts
    dest = opts.dest or work_dir(lab.root) / "runs" / lab.slug
    csv_path, json_path = dataset.write(
        dest, opts.name or opts.variant, rows, meta, setup.artefacts
    )
    return RunResult(csv_path, json_path, dataset.read(json_path))


class Driving(Protocol):
    """How a run's load is driven: chosen once per lab (`driving_for`)."""

    mode: str
    listens: bool  # a service to start and probe before the load

    def duration_s(self, lab: Lab, params: dict[str, str]) -> float: ...

    def start(
        self, setup: Setup, serving: Serving, load: LoadProgram, origin: Origin
    ) -> tuple[list[str] | None, float, float]:
        """Start the load at t_s = 0: (the load's argv, t0, the deadline), monotonic."""
        ...

    def idle_s(self, setup: Setup) -> float: ...

    def check(self, setup: Setup, result: LoadResult) -> None: ...

    def service_pid(self, serving: Serving, load: LoadProgram) -> int | None: ...

    def phases(self, setup: Setup, final: dict[str, Any], ended_s: float) -> dict[str, float]: ...


class LoadDriven:
    """A listening service, driven by the lab's load program."""

    mode = "load"
    listens = True

    def duration_s(self, lab: Lab, params: dict[str, str]) -> float:
        return _duration(params)

    def start(
        self, setup: Setup, serving: Serving, load: LoadProgram, origin: Origin
    ) -> tuple[list[str] | None, float, float]:
        time.sleep(setup.lab.pre_load_s)  # a baseline before the load starts (negative t_s)
        assert setup.load_built is not None
        argv = setup.lab.load.command.render(setup.values)
        _require(argv)
        origin.at = t0 = time.monotonic()
        load.start(argv, cwd=setup.load_built.out, log=setup.run_dir / "load.log")
        return argv, t0, t0 + setup.duration_s + setup.lab.load.grace_s

    def idle_s(self, setup: Setup) -> float:
        return setup.lab.idle_s if setup.opts.idle_s is None else setup.opts.idle_s

    def check(self, setup: Setup, result: LoadResult) -> None:
        _check_load(setup.lab, result, setup.duration_s, setup.run_dir / "load.log")

    def service_pid(self, serving: Serving, load: LoadProgram) -> int | None:
        return serving.service.pid if serving.service is not None else None

    def phases(self, setup: Setup, final: dict[str, Any], ended_s: float) -> dict[str, float]:
        return {"pre_load_s": setup.lab.pre_load_s, "load_s": ended_s}


class SelfDriven:
    """A client program that is its own load (lab 02): it starts at t_s = 0, prints the
    load protocol's progress lines, and exits; it is the measured process. On SIGTERM
    (an adaptive run's decisive look) it stops sending, gives its backlog a moment to
    drain, prints its final line and exits."""

    mode = "self-driving"
    listens = False

    def duration_s(self, lab: Lab, params: dict[str, str]) -> float:
        return _expected_s(params, lab.service.max_s)

    def start(
        self, setup: Setup, serving: Serving, load: LoadProgram, origin: Origin
    ) -> tuple[list[str] | None, float, float]:
        _require(serving.service_argv)
        origin.at = t0 = time.monotonic()
        log = setup.run_dir / "service.log"
        load.start(serving.launch_argv, cwd=setup.built.src, log=log, env=serving.env)
        setup.log(f"service started (pid {load.pid}); it drives itself and exits")
        return None, t0, t0 + setup.lab.service.max_s

    def idle_s(self, setup: Setup) -> float:
        return 0.0  # the service has exited: there is nothing left to watch idle

    def check(self, setup: Setup, result: LoadResult) -> None:
        _check_self_driving(setup.lab, result, setup.run_dir / "service.log")

    def service_pid(self, serving: Serving, load: LoadProgram) -> int | None:
        return load.pid  # the service is the program that drives itself

    def phases(self, setup: Setup, final: dict[str, Any], ended_s: float) -> dict[str, float]:
        # The steady window ends where the client says its load ended (before it drained).
        load_end = _as_float(final.get("load_end_s"))
        load_s = min(ended_s, round(load_end, 3)) if load_end is not None else ended_s
        return {"pre_load_s": 0.0, "load_s": load_s, "exit_s": ended_s}


def driving_for(lab: Lab) -> Driving:
    return SelfDriven() if lab.self_driving else LoadDriven()


class Origin:
    """The monotonic time of load start (t_s = 0), once it is known."""

    def __init__(self) -> None:
        self.at: float | None = None

    def __call__(self) -> float | None:
        return self.at


@dataclass(frozen=True)
class _Watched:
    """A child that must stay up for the whole run (an aux, or a listening service)."""

    what: str
    child: subprocess.Popen[bytes]
    log: Path
    name: str | None  # aux name: its RSS is recorded as `<name>_rss_bytes`

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child.poll() is None else None


def _as_float(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _expected_s(params: dict[str, str], max_s: float) -> float:
    """How long a self-driving run is expected to take, for the progress bar."""
    try:
        return min(float(params.get("duration", max_s)), max_s)
    except ValueError:
        return max_s


def _check_load(lab: Lab, result: LoadResult, duration_s: float, load_log: Path) -> None:
    if result.timed_out:
        raise LeakLabError(
            f"the load did not stop by itself within {duration_s + lab.load.grace_s:.0f} s; "
            f"it was killed (log: {load_log})",
            "the load program must bound its own duration",
        )
    if result.exit_code != 0 and not (result.asked_to_stop and result.final):
        raise LeakLabError(
            f"the load program failed (exit {result.exit_code}); last lines of {load_log}:\n"
            f"{tail(load_log)}",
            "fix the load flags in lab.toml or --param",
        )
    if not result.final:
        raise LeakLabError(
            'the load program exited without its final progress line ({"done": true, ...})',
            "print one JSON object per second and a last one with done: true (leaklab.load)",
        )


def _check_self_driving(lab: Lab, result: LoadResult, service_log: Path) -> None:
    if result.timed_out:
        raise LeakLabError(
            f"the service did not exit by itself within {lab.service.max_s:.0f} s; "
            f"it was killed (log: {service_log})",
            "use a smaller workload (--param), or raise [service] max_s in lab.toml",
        )
    if (result.exit_code != 0 and not result.asked_to_stop) or not result.final:
        problem = (
            f"exited with code {result.exit_code}"
            if result.exit_code != 0
            else 'exited without its final progress line ({"done": true, ...})'
        )
        raise LeakLabError(
            f"the service {problem}; last lines of {service_log}:\n{tail(service_log)}",
            "read the log above; a crash under load is a result too: fix, run again",
        )


def _duration(params: dict[str, str]) -> float:
    try:
        value = float(params.get("duration", "60"))
    except ValueError:
        raise LeakLabError(
            f"duration must be a number of seconds, not {params['duration']!r}",
            "pass e.g. --duration 60",
        ) from None
    if not 1 <= value <= 600:
        raise LeakLabError(f"duration {value:g} s is out of range", "use 1 to 600 seconds")
    return value


def make_samplers(
    setup: Setup,
    recorder: Recorder,
    serving: Serving,
    load: LoadProgram,
    origin: Callable[[], float | None],
) -> list[Sampler]:
    """RSS of the service, the load and each aux process, and the lab's own series."""
    lab, values, every = setup.lab, setup.values, setup.lab.sample_interval_s
    pid_of = _service_pid(setup, serving, load)
    samplers = [
        Sampler("rss", every, rss_poll(recorder, "rss_bytes", pid_of)),
        Sampler("cpu", every, cpu_poll(recorder, "cpu_seconds", pid_of)),
    ]
    if setup.driving.listens:  # a separate load program, measured too
        poll = rss_poll(recorder, "load_rss_bytes", lambda: load.pid)
        samplers.append(Sampler("load-rss", every, poll))
    if serving.cgroup is not None:  # what the kernel holds to --memory-limit
        samplers.append(Sampler("cgroup", every, _cgroup_poll(recorder, serving.cgroup)))
    for watched in serving.watched:
        if watched.name is not None:
            poll = rss_poll(recorder, f"{watched.name}_rss_bytes", lambda w=watched: w.pid)  # type: ignore[misc]
            samplers.append(Sampler(f"{watched.name}-rss", every, poll))
    for i, sampler in enumerate(lab.samplers):
        if sampler.kind == "http_json":
            url = values["url"] + fill(sampler.path or "/", values)
            poll = http_json_poll(recorder, url, sampler.series)
        else:
            path = Path(fill(sampler.path or "{run_dir}/series.jsonl", values))
            poll = JsonlTail(recorder, path, sampler.series, sampler.time_field, origin)
        samplers.append(Sampler(f"{sampler.kind}-{i}", sampler.interval_s, poll))
    return samplers


def _cgroup_poll(recorder: Recorder, cgroup: Cgroup) -> Callable[[], None]:
    def poll() -> None:
        if (used := cgroup.usage()) is not None:
            recorder.add("cgroup_memory_bytes", used)

    return poll


def _check_alive(watched: list[_Watched]) -> None:
    for w in watched:
        if w.child.poll() is not None:
            raise LeakLabError(
                f"{w.what} exited with code {w.child.returncode} during the run; "
                f"last lines of {w.log}:\n{tail(w.log)}",
                "a crash under load is a result too: read the log, fix, run again",
            )


def _take_snapshots(setup: Setup, group: ProcessGroup, pid: int) -> None:
    """Each snapshot's HTTP body or command stdout becomes `artefacts/<name>`.

    A command runs in the run's folder with its own `env` (placeholders filled), so it
    may also write files of its own into `{artefacts}`; it runs in the run's process
    group, so a timeout or a Ctrl-C stops everything it started. A failed snapshot is
    logged, not fatal: the run's series are still worth keeping.
    """
    values = {**setup.values, "pid": str(pid)}
    for snap in setup.lab.snapshots:
        setup.log(f"snapshot {snap.name} ...")
        target = setup.artefacts / snap.name
        if snap.http:
            problem = _snapshot_http(values["url"] + fill(snap.http, values), target)
        else:
            assert snap.command is not None
            problem = _snapshot_command(group, snap, values, target)
        setup.log(
            f"snapshot {snap.name} failed: {problem}" if problem else f"snapshot {snap.name} taken"
        )


def _snapshot_http(url: str, target: Path) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            target.write_bytes(resp.read())
    except (urllib.error.URLError, OSError) as exc:
        return str(exc)
    return None


def _snapshot_command(
    group: ProcessGroup, snap: Snapshot, values: dict[str, str], target: Path
) -> str | None:
    assert snap.command is not None
    try:
        result = group.run(
            snap.command.render(values),
            cwd=Path(values["run_dir"]),
            env=snap.command.render_env(values),
            timeout_s=snap.timeout_s,
        )
    except subprocess.TimeoutExpired:
        return f"did not finish within {snap.timeout_s:g} s; stopped with everything it started"
    except (OSError, LeakLabError) as exc:
        return str(exc)
    if result.returncode != 0:
        return result.stderr.decode(errors="replace")[-300:]
    target.write_bytes(result.stdout)
    return None


def _git(root: Path, *args: str) -> str | None:
    """git's answer, or None when git is not installed or fails (provenance: unknown)."""
    try:
        result = run_captured(["git", *args], cwd=root, timeout_s=30)
    except (OSError, LeakLabError, subprocess.TimeoutExpired):
        return None
    return result.stdout.decode(errors="replace").strip() if result.returncode == 0 else None


def git_provenance(root: Path, slug: str) -> dict[str, Any]:
    """The commit a run was made from, and whether the lab had uncommitted changes."""
    commit = _git(root, "rev-parse", "HEAD")
    status = _git(root, "status", "--porcelain", "--", f"labs/{slug}")
    return {
        "git_commit": commit or "unknown",
        "git_dirty": None if status is None else bool(status),
    }


def tool_versions(lab: Lab, ledger: Ledger | None = None) -> dict[str, str]:
    """The first line each of the lab's `[lab.versions]` commands prints, and Python's."""
    out = {"python": platform.python_version()}
    for name, argv in lab.versions.items():
        try:
            result = run_captured(list(argv), cwd=lab.root, timeout_s=20, ledger=ledger)
            text = (result.stdout or result.stderr).decode(errors="replace")
            out[name] = text.strip().splitlines()[0]
        except (OSError, IndexError, LeakLabError, subprocess.TimeoutExpired):
            out[name] = "unknown"
    return out


def _provenance(
    setup: Setup, measured: Measured, phases: dict[str, float], ledger: Ledger
) -> dict[str, Any]:
    lab, opts, serving = setup.lab, setup.opts, measured.serving
    return {
        "lab": lab.slug,
        "variant": opts.variant,
        "order": opts.order,
        "build_key": setup.built.key,
        **git_provenance(lab.root, lab.slug),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_params": setup.params,
        "phases": phases,
        "ready_s": round(serving.ready_s, 3),
        "load_result": measured.result.final,
        "peaks": _peaks(measured.recorder, serving),
        "mode": setup.driving.mode,
        **({"sequential": measured.watch.to_json()} if measured.watch else {}),
        "sampler_errors": len(measured.recorder.errors),
        **({"machine": measured.machine} if measured.machine else {}),
        "commands": {
            "leaklab": shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]]),
            "service": shlex.join(serving.service_argv),
            "load": shlex.join(measured.load_argv) if measured.load_argv is not None else None,
            **{f"aux_{n}": shlex.join(argv) for n, argv in serving.aux_argvs.items()},
        },
        "versions": tool_versions(lab, ledger),
        "host": {
            "cpus": os.cpu_count(),
            "memory_bytes": psutil.virtual_memory().total,
            "platform": platform.platform(),
        },
    }


def _peaks(recorder: Recorder, serving: Serving) -> dict[str, float | None]:
    return {
        "service_rss_bytes": recorder.peak.get("rss_bytes"),
        "load_rss_bytes": recorder.peak.get("load_rss_bytes"),
        **{f"{n}_rss_bytes": recorder.peak.get(f"{n}_rss_bytes") for n in serving.aux_argvs},
        "harness_rss_bytes": tree_rss(os.getpid()) or 0.0,
    }
