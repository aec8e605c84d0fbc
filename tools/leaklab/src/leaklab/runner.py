"""One run, start to finish (DESIGN.md section 3).

build -> start the service in its own process group -> wait for readiness -> sample ->
drive the bounded load -> optional idle -> snapshots -> stop everything -> write the
dataset atomically. Every exit path (success, error, Ctrl-C) stops every child; only
a complete run writes a dataset.
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
from leaklab.build import Built, build_load, build_variant, tail
from leaklab.errors import LeakLabError
from leaklab.load import LoadProgram
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
    dest: Path | None = None  # folder for the dataset; default .leaklab/runs/<slug>
    name: str | None = None  # dataset name; default the variant
    order: int = 99


@dataclass(frozen=True)
class RunResult:
    csv: Path
    json: Path
    data: dataset.Dataset


def run(lab: Lab, opts: RunOptions, log: Callable[[str], None] = print) -> RunResult:
    params = {**lab.load.params, **(opts.params or {})}
    duration_s = _duration(params)
    built = build_variant(lab, opts.variant, log)
    load_built = build_load(lab, log)

    port = opts.port or free_port()
    if opts.port and port_in_use(port):
        raise LeakLabError(f"port {port} on {LOOPBACK} is in use", "omit --port to pick a free one")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_dir = work_dir(lab.root) / "runs" / lab.slug / "logs" / f"{stamp}-{opts.variant}"
    artefacts = run_dir / "artefacts"
    artefacts.mkdir(parents=True)
    values = {
        **params,
        "port": str(port),
        "url": f"http://{LOOPBACK}:{port}",
        "build": str(built.out),
        "src": str(built.src),
        "load": str(load_built.out),
        "run_dir": str(run_dir),
        "artefacts": str(artefacts),
    }
    idle_s = lab.idle_s if opts.idle_s is None else opts.idle_s
    recorder = Recorder()
    service_log = run_dir / "service.log"
    load_log = run_dir / "load.log"

    with ProcessGroup() as group:
        service_argv = lab.service.command.render(values)
        env = {k: fill(v, values) for k, v in lab.service.command.env.items()}
        env[SERIES_FILE_ENV] = str(run_dir / "series.jsonl")
        with service_log.open("ab") as sink:
            service = group.start(
                service_argv, cwd=built.src, env=env, stdout=sink, stderr=subprocess.STDOUT
            )
        ready_url = f"{values['url']}{lab.service.ready_http}" if lab.service.ready_http else None
        ready_s = wait_ready(
            service, ready_url, port, lab.service.ready_timeout_s, lambda: tail(service_log)
        )
        log(f"service ready in {ready_s:.1f} s on {values['url']} (pid {service.pid})")

        load = LoadProgram(group, recorder)
        samplers = make_samplers(lab, recorder, values, service.pid, lambda: load.pid)
        for s in samplers:
            s.start()
        try:
            time.sleep(lab.pre_load_s)  # a baseline before the load starts (negative t_s)
            load_argv = lab.load.command.render(values)
            t0 = time.monotonic()
            load.start(load_argv, cwd=load_built.out, log=load_log)
            with LiveProgress(
                f"{lab.slug} {opts.variant}", duration_s, recorder, lab.analysis.series
            ) as live:
                deadline = t0 + duration_s + lab.load.grace_s
                while load.running() and time.monotonic() < deadline:
                    _check_alive(service, service_log)
                    live.update(time.monotonic() - t0, load.result.last)
                    time.sleep(0.25)
                result = load.finish(deadline)
                t_load_end = time.monotonic()
                live.update(t_load_end - t0, result.final or result.last)
                idle_end = t_load_end + idle_s
                while time.monotonic() < idle_end:
                    _check_alive(service, service_log)
                    live.update(time.monotonic() - t0, result.final, phase="idle")
                    time.sleep(0.25)
            _check_alive(service, service_log)
            _take_snapshots(lab, values, service.pid, artefacts, log)
        finally:
            for s in samplers:
                s.stop()
        group.stop(service)

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

    rows = [(at - t0, series, value) for at, series, value in recorder.snapshot()]
    meta = _provenance(
        lab,
        opts,
        built,
        params,
        service_argv,
        load_argv,
        result.final,
        recorder,
        phases={
            "pre_load_s": lab.pre_load_s,
            "load_s": round(t_load_end - t0, 3),
            "idle_s": idle_s,
            "warmup_s": lab.analysis.warmup_s,
        },
        ready_s=ready_s,
    )
    dest = opts.dest or work_dir(lab.root) / "runs" / lab.slug
    csv_path, json_path = dataset.write(dest, opts.name or opts.variant, rows, meta, artefacts)
    return RunResult(csv_path, json_path, dataset.read(json_path))


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
    service_pid: int,
    load_pid: Callable[[], int | None],
) -> list[Sampler]:
    every = lab.sample_interval_s
    samplers = [
        Sampler("rss", every, rss_poll(recorder, "rss_bytes", lambda: service_pid)),
        Sampler("load-rss", every, rss_poll(recorder, "load_rss_bytes", load_pid)),
    ]
    for i, spec in enumerate(lab.samplers):
        if spec.kind == "http_json":
            url = values["url"] + fill(spec.path or "/", values)
            poll = http_json_poll(recorder, url, spec.series)
        else:
            path = Path(fill(spec.path or "{run_dir}/series.jsonl", values))
            poll = JsonlTail(recorder, path, spec.series)
        samplers.append(Sampler(f"{spec.kind}-{i}", spec.interval_s, poll))
    return samplers


def _check_alive(service: subprocess.Popen[bytes], log: Path) -> None:
    if service.poll() is not None:
        raise LeakLabError(
            f"the service exited with code {service.returncode} during the run; "
            f"last lines of {log}:\n{tail(log)}",
            "a crash under load is a result too: read the log, fix, run again",
        )


def _take_snapshots(
    lab: Lab, values: dict[str, str], pid: int, folder: Path, log: Callable[[str], None]
) -> None:
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
            result = subprocess.run(
                snap.command.render(values), capture_output=True, timeout=60, check=False
            )
            if result.returncode == 0:
                target.write_bytes(result.stdout)
            else:
                log(f"snapshot {snap.name} failed: {result.stderr.decode()[:200]}")


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
    load_argv: list[str],
    final: dict[str, Any],
    recorder: Recorder,
    phases: dict[str, float],
    ready_s: float,
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
            "harness_rss_bytes": harness_rss,
        },
        "sampler_errors": len(recorder.errors),
        "commands": {
            "leaklab": shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]]),
            "service": shlex.join(service_argv),
            "load": shlex.join(load_argv),
        },
        "versions": _versions(lab),
        "host": {
            "cpus": os.cpu_count(),
            "memory_bytes": psutil.virtual_memory().total,
            "platform": platform.platform(),
        },
    }
