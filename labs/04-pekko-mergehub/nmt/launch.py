#!/usr/bin/env python3
"""Start the service with Native Memory Tracking; take NMT's baseline and diff at the
edges of the window the harness fits its slopes on.

    launch.py ARTEFACTS PORT WARMUP_S DURATION_S java ARGS...

Used only by the `nmt` capture (lab.toml's `launcher` parameter, README "Where the RSS
rise goes"): NMT costs the JVM time and memory of its own, so the standard runs go
without it. The JVM replaces this process (exec), so the PID the harness samples RSS
from and snapshots is the JVM's. Before that, a helper is double-forked: it is not a
child of the JVM, so neither its memory nor the jcmd it starts counts in the JVM's RSS.
The helper waits for the load's first accepted update (the load's t = 0, to within
0.25 s), then writes into ARTEFACTS

- nmt-baseline.txt at WARMUP_S into the load: `jcmd PID VM.native_memory baseline`,
- nmt-summary-diff.txt at DURATION_S (the load's end): `jcmd PID VM.native_memory
  summary.diff`, every category's current reserved and committed memory and its change
  since the baseline,

each headed by the JVM's uptime and the kernel's view of the process at that moment
(VmRSS, RssAnon, RssFile from /proc/PID/status), to compare NMT's committed total with.
Beside each, nmt-smaps-baseline.txt and nmt-smaps-end.txt: `jcmd PID GC.heap_info` (the
Java heap's address range), then one line per mapping with resident pages from
/proc/PID/smaps, so the RSS change can be placed in the Java heap's mapping, in glibc's
malloc arenas or elsewhere, which NMT's committed figures cannot say. Last, 10 s into
the idle phase (after the fitted window), nmt-trim.txt: `jcmd PID
System.trim_native_heap`, glibc's malloc_trim, which returns the malloc arenas' free
pages to the kernel and prints RSS before and after: memory the JVM had freed but the
process still held.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

NMT_OPTION = "-XX:NativeMemoryTracking=summary"
POLL_S = 0.25


def metrics(port: int) -> dict[str, float] | None:
    try:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/metrics", timeout=2
        ) as resp:
            doc = json.load(resp)
    except (OSError, ValueError):
        return None  # not listening yet, or busy: ask again
    return doc if isinstance(doc, dict) else None


def alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def kernel_view(pid: int) -> str:
    """The lines of /proc/PID/status that say how much of the process is resident."""
    keep = ("VmRSS", "RssAnon", "RssFile", "RssShmem")
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return "\n".join(line for line in lines if line.startswith(keep))


def take(pid: int, port: int, what: str, target: Path, t_load_s: float) -> None:
    doc = metrics(port) or {}
    head = (
        f"# jcmd {pid} VM.native_memory {what}\n"
        f"# load t = {t_load_s:.2f} s, JVM uptime {doc.get('uptime_ms', 'unknown')} ms\n"
        + "".join(f"# {line}\n" for line in kernel_view(pid).splitlines())
    )
    out = jcmd(pid, "VM.native_memory", what, "scale=KB")
    target.write_text(head + out.stdout + out.stderr)


def mappings(pid: int) -> str:
    """One line per mapping with resident pages: range, perms, size, Rss, Anonymous, name."""
    rows, current, fields = [], "", {}
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines() + ["end"]:
        key, _, rest = line.partition(":")
        if (
            " " in key or line == "end"
        ):  # a mapping's header line: flush the previous one
            if current and fields.get("Rss", 0) > 0:
                parts = current.split()
                name = parts[5] if len(parts) > 5 else "[anon]"
                rows.append(
                    f"{parts[0]} {parts[1]} size={fields['Size']} rss={fields['Rss']} "
                    f"anon={fields.get('Anonymous', 0)} {name}"
                )
            current, fields = line, {}
        elif rest.strip().endswith("kB"):
            fields[key] = int(rest.split()[0])
    return "# range perms size_kB rss_kB anonymous_kB name\n" + "\n".join(rows) + "\n"


def jcmd(pid: int, *command: str) -> subprocess.CompletedProcess[str]:
    """One jcmd diagnostic command on the JVM; its output is kept even when it fails."""
    return subprocess.run(
        ["jcmd", str(pid), *command],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def take_map(pid: int, target: Path, t_load_s: float) -> None:
    heap = jcmd(pid, "GC.heap_info")
    head = f"# load t = {t_load_s:.2f} s\n# jcmd {pid} GC.heap_info\n"
    target.write_text(
        head
        + heap.stdout
        + "# /proc/PID/smaps, mappings with Rss > 0\n"
        + mappings(pid)
    )


def take_trim(pid: int, target: Path, t_load_s: float) -> None:
    out = jcmd(pid, "System.trim_native_heap")
    target.write_text(
        f"# load t = {t_load_s:.2f} s\n# jcmd {pid} System.trim_native_heap\n"
        + out.stdout
        + out.stderr
    )


def watch(
    pid: int, artefacts: Path, port: int, warmup_s: float, duration_s: float
) -> None:
    # t = 0 is the first accepted update; give up if the JVM goes or the load never comes.
    deadline = time.monotonic() + 300
    while alive(pid) and time.monotonic() < deadline:
        doc = metrics(port)
        if doc and doc.get("published_accepted", 0) > 0:
            break
        time.sleep(POLL_S)
    else:
        return
    t0 = time.monotonic()
    for at, what, name, smaps in (
        (warmup_s, "baseline", "nmt-baseline.txt", "nmt-smaps-baseline.txt"),
        (duration_s, "summary.diff", "nmt-summary-diff.txt", "nmt-smaps-end.txt"),
    ):
        time.sleep(max(0.0, t0 + at - time.monotonic()))
        if not alive(pid):
            return
        # smaps first: read in milliseconds, it is the closer of the two to `at`.
        take_map(pid, artefacts / smaps, time.monotonic() - t0)
        take(pid, port, what, artefacts / name, time.monotonic() - t0)
    time.sleep(max(0.0, t0 + duration_s + 10 - time.monotonic()))
    if alive(pid):
        take_trim(pid, artefacts / "nmt-trim.txt", time.monotonic() - t0)


def main() -> None:
    artefacts, port, warmup_s, duration_s, *command = sys.argv[1:]
    if not command:
        sys.exit("usage: launch.py ARTEFACTS PORT WARMUP_S DURATION_S java ARGS...")
    pid = os.getpid()  # the JVM's, once exec'd
    if os.fork() == 0:
        if os.fork() == 0:
            watch(pid, Path(artefacts), int(port), float(warmup_s), float(duration_s))
        os._exit(0)  # the first child exits at once: the helper is nobody's child here
    os.wait()
    os.execvp(command[0], [command[0], NMT_OPTION, *command[1:]])


if __name__ == "__main__":
    main()
