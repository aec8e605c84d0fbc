#!/usr/bin/env python3
"""Start the service and, 10 s into the idle phase, keep two recordings of it for the
staged diagnosis: the JFR recording and a heap dump.

    launch.py ARTEFACTS PORT DURATION_S java ARGS...

Used only by the `recordings` capture (lab.toml's `launcher` parameter, README "Open the
recordings"): the standard runs keep neither, a heap dump is tens of MB. The JVM
replaces this process (exec), so the PID the harness samples and snapshots is the JVM's.
Before that, a helper is double-forked (not a child of the JVM, so neither its memory
nor the jcmd it starts counts in the JVM's RSS). It waits for the load's first accepted
update (the load's t = 0, to within 0.25 s), then, 10 s after the load's end
(DURATION_S), before the harness's own snapshots at 20 s idle, writes into ARTEFACTS

- recording.jfr: `jcmd PID JFR.dump name=leaklab path-to-gc-roots=true`, the run's
  continuous recording (jfr/leaklab.jfc), with each old-object sample's path from a GC
  root, for `jfr print` or JDK Mission Control;
- heap.hprof.gz: `jcmd PID GC.heap_dump -gz=9`, live objects only (the dump starts
  with a full collection), gzipped by the JVM, for Eclipse MAT (1.12 or later reads the
  gzipped dumps JDK 15 and later write);
- recordings.txt: both commands, their output, and the JVM's uptime when they ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

POLL_S = 0.25
IDLE_S = 10


def accepted(port: int) -> float:
    """The service's count of accepted updates, 0 while it is not answering yet."""
    try:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/metrics", timeout=2
        ) as resp:
            doc = json.load(resp)
    except (OSError, ValueError):
        return 0
    return float(doc.get("published_accepted", 0)) if isinstance(doc, dict) else 0


def alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def jcmd(pid: int, *command: str) -> str:
    """One jcmd diagnostic command on the JVM, its command line and output as text."""
    out = subprocess.run(
        ["jcmd", str(pid), *command],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return f"$ jcmd {pid} {' '.join(command)}\n{out.stdout}{out.stderr}"


def watch(pid: int, artefacts: Path, port: int, duration_s: float) -> None:
    deadline = time.monotonic() + 300
    while alive(pid) and time.monotonic() < deadline:
        if accepted(port) > 0:
            break
        time.sleep(POLL_S)
    else:
        return
    t0 = time.monotonic()
    time.sleep(max(0.0, t0 + duration_s + IDLE_S - time.monotonic()))
    if not alive(pid):
        return
    log = [f"# load t = {time.monotonic() - t0:.2f} s\n", jcmd(pid, "VM.uptime")]
    log.append(
        jcmd(
            pid,
            "JFR.dump",
            "name=leaklab",
            f"filename={artefacts / 'recording.jfr'}",
            "path-to-gc-roots=true",
        )
    )
    log.append(jcmd(pid, "GC.heap_dump", "-gz=9", str(artefacts / "heap.hprof.gz")))
    (artefacts / "recordings.txt").write_text("".join(log))


def main() -> None:
    artefacts, port, duration_s, *command = sys.argv[1:]
    if not command:
        sys.exit("usage: launch.py ARTEFACTS PORT DURATION_S java ARGS...")
    pid = os.getpid()  # the JVM's, once exec'd
    if os.fork() == 0:
        if os.fork() == 0:
            watch(pid, Path(artefacts), int(port), float(duration_s))
        os._exit(0)  # the first child exits at once: the helper is nobody's child here
    os.wait()
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
