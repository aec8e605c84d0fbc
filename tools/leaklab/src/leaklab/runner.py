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

import os
import platform
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from leaklab import dataset
from leaklab.build import Built, build_load, build_variant, tail, tools_dir
from leaklab.errors import LeakLabError
from leaklab.load import LoadProgram, LoadResult
from leaklab.paths import work_dir
from leaklab.procs import LOOPBACK, ProcessGroup, free_port, port_in_use, wait_ready
from leaklab.progress import LiveProgress
from leaklab.samplers import JsonlTail, Recorder, Sampler, http_json_poll, rss_poll, tree_rss
from leaklab.spec import Lab, fill

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
    order: int = 99


@dataclass(frozen=True)
class RunResult:
    csv: Path
    json: Path
    data: dataset.Dataset


def run(lab: Lab, opts: RunOptions, log: Callable[[str], None] = print) -> RunResult:
    lab = lab.for_variant(opts.variant)  # an implementation's own build and service
    params = {**lab.params, **(opts.params or {})}
    driven = not lab.self_driving  # a listening service, driven by the lab's load program
    duration_s = _duration(params) if driven else _expected_s(params, lab.service.max_s)
    built = build_variant(lab, opts.variant, log)
    load_built = build_load(lab, log) if driven else None

    port = opts.port or free_port()
    if opts.port and port_in_use(port):
        raise LeakLabError(f"port {port} on {LOOPBACK} is in use", "omit --port to pick a free one")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    run_dir = work_dir(lab.root) / "runs" / lab.slug / "logs" / f"{stamp}-{opts.variant}"
    artefacts = run_dir / "artefacts"
    artefacts.mkdir(parents=True)
    values = {
        **params,
        "port": str(port),
        "url": f"http://{LOOPBACK}:{port}",
        "build": str(built.out),
        "src": str(built.src),
        "load": str(load_built.out) if load_built else "",
        "run_dir": str(run_dir),
        "artefacts": str(artefacts),
        "tools": tools_dir(lab),
    }
    for aux in lab.aux:
        aux_port = free_port()
        values[f"{aux.name}_port"] = str(aux_port)
        values[f"{aux.name}_url"] = f"http://{LOOPBACK}:{aux_port}"
    idle_s = lab.idle_s if opts.idle_s is None else opts.idle_s
    if lab.self_driving:
        idle_s = 0.0  # the service has exited: there is nothing left to watch idle
    recorder = Recorder()
    origin = Origin()
    service_log = run_dir / "service.log"
    load_log = run_dir / "load.log"
    aux_argvs: dict[str, list[str]] = {}

    with ProcessGroup() as group:
        helpers = []
        for aux in lab.aux:
            aux_log = run_dir / f"{aux.name}.log"
            aux_argvs[aux.name] = aux.command.render(values)
            with aux_log.open("ab") as sink:
                child = group.start(
                    aux_argvs[aux.name],
                    cwd=built.src,
                    env=aux.command.render_env(values),
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                )
            aux_port = int(values[f"{aux.name}_port"])
            url = f"{values[f'{aux.name}_url']}{aux.ready.http}" if aux.ready.http else None
            took = wait_ready(
                child,
                url,
                aux_port,
                aux.ready.timeout_s,
                lambda path=aux_log: tail(path),  # type: ignore[misc]
                what=f"the {aux.name} (aux)",
                probe=bool(aux.ready.http or aux.ready.tcp),
            )
            log(f"{aux.name} ready in {took:.1f} s (pid {child.pid})")
            helpers.append(_Watched(f"the {aux.name} (aux)", child, aux_log, aux.name))

        service_argv = lab.service.command.render(values)
        env = lab.service.command.render_env(values)
        env[SERIES_FILE_ENV] = str(run_dir / "series.jsonl")
        load = LoadProgram(group, recorder)
        service: subprocess.Popen[bytes] | None = None
        ready_s = 0.0

        def service_pid() -> int | None:
            if lab.self_driving:
                return load.pid  # the service is the program that drives itself
            return service.pid if service is not None else None

        def load_pid() -> int | None:
            return load.pid if driven else None

        if driven:
            with service_log.open("ab") as sink:
                service = group.start(
                    service_argv, cwd=built.src, env=env, stdout=sink, stderr=subprocess.STDOUT
                )
            ready_url = (
                f"{values['url']}{lab.service.ready.http}" if lab.service.ready.http else None
            )
            ready_s = wait_ready(
                service,
                ready_url,
                port,
                lab.service.ready.timeout_s,
                lambda: tail(service_log),
                probe=bool(lab.service.ready.http or lab.service.ready.tcp),
            )
            log(f"service ready in {ready_s:.1f} s on {values['url']} (pid {service.pid})")
            helpers.append(_Watched("the service", service, service_log, None))

        samplers = make_samplers(
            lab, recorder, values, service_pid, load_pid, origin, [(h.name, h) for h in helpers]
        )
        for s in samplers:
            s.start()
        try:
            title = f"{lab.slug} {opts.variant}"
            if driven:
                time.sleep(lab.pre_load_s)  # a baseline before the load starts (negative t_s)
                load_argv: list[str] | None = lab.load.command.render(values)
                assert load_built is not None and load_argv is not None
                origin.at = t0 = time.monotonic()
                load.start(load_argv, cwd=load_built.out, log=load_log)
                deadline = t0 + duration_s + lab.load.grace_s
            else:
                # Self-driving: the service is the load; it starts now and exits by itself.
                load_argv = None
                origin.at = t0 = time.monotonic()
                load.start(service_argv, cwd=built.src, log=service_log, env=env)
                deadline = t0 + lab.service.max_s
                log(f"service started (pid {load.pid}); it drives itself and exits")
            with LiveProgress(title, duration_s, recorder, lab.analysis.series) as live:
                while load.running() and time.monotonic() < deadline:
                    _check_alive(helpers)
                    live.update(time.monotonic() - t0, load.result.last)
                    time.sleep(0.25)
                result = load.finish(deadline)
                t_load_end = time.monotonic()
                live.update(t_load_end - t0, result.final or result.last)
                idle_end = t_load_end + idle_s
                while time.monotonic() < idle_end:
                    _check_alive(helpers)
                    live.update(time.monotonic() - t0, result.final, phase="idle")
                    time.sleep(0.25)
            _check_alive(helpers)
            if lab.self_driving:
                _check_self_driving(lab, result, service_log)
            pid = service.pid if service else (load.last_pid or 0)
            if opts.snapshots:
                _take_snapshots(lab, values, pid, artefacts, run_dir, log)
        finally:
            for s in samplers:
                s.stop()
            for s in samplers:
                if isinstance(s.poll, JsonlTail):
                    s.poll()  # the lines written after the last scheduled poll
        if service is not None:
            group.stop(service)

    if driven:
        _check_load(lab, result, duration_s, load_log)

    rows = [(at - t0, series, value) for at, series, value in recorder.snapshot()]
    load_s = round(t_load_end - t0, 3)
    if lab.self_driving and _number(result.final.get("load_end_s")) is not None:
        load_s = min(load_s, round(float(result.final["load_end_s"]), 3))
    phases = {
        "pre_load_s": lab.pre_load_s if driven else 0.0,
        "load_s": load_s,
        "idle_s": idle_s,
        "warmup_s": lab.analysis.warmup_s,
    }
    if lab.self_driving:
        phases["exit_s"] = round(t_load_end - t0, 3)
    meta = _provenance(
        lab,
        opts,
        built,
        params,
        service_argv,
        load_argv,
        result.final,
        recorder,
        phases=phases,
        ready_s=ready_s,
        aux_argvs=aux_argvs,
    )
    dest = opts.dest or work_dir(lab.root) / "runs" / lab.slug
    csv_path, json_path = dataset.write(dest, opts.name or opts.variant, rows, meta, artefacts)
    return RunResult(csv_path, json_path, dataset.read(json_path))


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


def _number(value: object) -> float | None:
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
    if result.exit_code != 0 or not result.final:
        raise LeakLabError(
            f"the load program failed (exit {result.exit_code}); last lines of {load_log}:\n"
            f"{tail(load_log)}",
            "fix the load flags in lab.toml or --param",
        )


def _check_self_driving(lab: Lab, result: LoadResult, service_log: Path) -> None:
    if result.timed_out:
        raise LeakLabError(
            f"the service did not exit by itself within {lab.service.max_s:.0f} s; "
            f"it was killed (log: {service_log})",
            "use a smaller workload (--param), or raise [service] max_s in lab.toml",
        )
    if result.exit_code != 0 or not result.final:
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
    lab: Lab,
    recorder: Recorder,
    values: dict[str, str],
    service_pid: int | Callable[[], int | None],
    load_pid: Callable[[], int | None],
    origin: Callable[[], float | None] = lambda: None,
    aux: list[tuple[str | None, _Watched]] | None = None,
) -> list[Sampler]:
    every = lab.sample_interval_s
    pid_of = service_pid if callable(service_pid) else (lambda: service_pid)
    samplers = [Sampler("rss", every, rss_poll(recorder, "rss_bytes", pid_of))]
    if not lab.self_driving:
        samplers.append(Sampler("load-rss", every, rss_poll(recorder, "load_rss_bytes", load_pid)))
    for name, watched in aux or []:
        if name is not None:
            poll = rss_poll(recorder, f"{name}_rss_bytes", lambda w=watched: w.pid)  # type: ignore[misc]
            samplers.append(Sampler(f"{name}-rss", every, poll))
    for i, spec in enumerate(lab.samplers):
        if spec.kind == "http_json":
            url = values["url"] + fill(spec.path or "/", values)
            poll = http_json_poll(recorder, url, spec.series)
        else:
            path = Path(fill(spec.path or "{run_dir}/series.jsonl", values))
            poll = JsonlTail(recorder, path, spec.series, spec.time_field, origin)
        samplers.append(Sampler(f"{spec.kind}-{i}", spec.interval_s, poll))
    return samplers


def _check_alive(watched: list[_Watched]) -> None:
    for w in watched:
        if w.child.poll() is not None:
            raise LeakLabError(
                f"{w.what} exited with code {w.child.returncode} during the run; "
                f"last lines of {w.log}:\n{tail(w.log)}",
                "a crash under load is a result too: read the log, fix, run again",
            )


def _take_snapshots(
    lab: Lab,
    values: dict[str, str],
    pid: int,
    folder: Path,
    run_dir: Path,
    log: Callable[[str], None],
) -> None:
    """Each snapshot's HTTP body or command stdout becomes `artefacts/<name>`.

    A command runs in the run's folder with its own `env` (placeholders filled), so it
    may also write files of its own into `{artefacts}`. A failed snapshot is logged,
    not fatal: the run's series are still worth keeping.
    """
    values = {**values, "pid": str(pid)}
    for snap in lab.snapshots:
        target = folder / snap.name
        if snap.http:
            url = values["url"] + fill(snap.http, values)
            try:
                with urllib.request.urlopen(url, timeout=30) as resp:
                    target.write_bytes(resp.read())
            except (urllib.error.URLError, OSError) as exc:
                log(f"snapshot {snap.name} failed: {exc}")
        elif snap.command:
            try:
                result = subprocess.run(
                    snap.command.render(values),
                    cwd=run_dir,
                    env={**os.environ, **snap.command.render_env(values)},
                    capture_output=True,
                    timeout=snap.timeout_s,
                    check=False,
                    start_new_session=True,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                log(f"snapshot {snap.name} failed: {exc}")
                continue
            if result.returncode == 0:
                target.write_bytes(result.stdout)
                log(f"snapshot {snap.name} taken")
            else:
                log(f"snapshot {snap.name} failed: {result.stderr.decode()[-300:]}")


def _git(root: Path, *args: str) -> str:
    result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    return result.stdout.strip()


def _versions(lab: Lab) -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name, argv in lab.versions.items():
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
            out[name] = (result.stdout or result.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            out[name] = "unknown"
    return out


def _provenance(
    lab: Lab,
    opts: RunOptions,
    built: Built,
    params: dict[str, str],
    service_argv: list[str],
    load_argv: list[str] | None,
    final: dict[str, Any],
    recorder: Recorder,
    phases: dict[str, float],
    ready_s: float,
    aux_argvs: dict[str, list[str]],
) -> dict[str, Any]:
    harness_rss = tree_rss(os.getpid()) or 0.0
    return {
        "lab": lab.slug,
        "variant": opts.variant,
        "order": opts.order,
        "build_key": built.key,
        "git_commit": _git(lab.root, "rev-parse", "HEAD"),
        "git_dirty": bool(_git(lab.root, "status", "--porcelain", "--", f"labs/{lab.slug}")),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_params": params,
        "phases": phases,
        "ready_s": round(ready_s, 3),
        "load_result": final,
        "peaks": {
            "service_rss_bytes": recorder.peak.get("rss_bytes"),
            "load_rss_bytes": recorder.peak.get("load_rss_bytes"),
            **{f"{n}_rss_bytes": recorder.peak.get(f"{n}_rss_bytes") for n in aux_argvs},
            "harness_rss_bytes": harness_rss,
        },
        "mode": "self-driving" if lab.self_driving else "load",
        "sampler_errors": len(recorder.errors),
        "commands": {
            "leaklab": shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]]),
            "service": shlex.join(service_argv),
            "load": shlex.join(load_argv) if load_argv is not None else None,
            **{f"aux_{n}": shlex.join(argv) for n, argv in aux_argvs.items()},
        },
        "versions": _versions(lab),
        "host": {
            "cpus": os.cpu_count(),
            "memory_bytes": psutil.virtual_memory().total,
            "platform": platform.platform(),
        },
    }
