"""The load side of a run: start the lab's load program and read its progress lines.

A self-driving service (a client program with no separate load, `lab.toml` without
`[load]`) speaks the same protocol on its stdout and is run through the same class.
Its final line may also carry `load_end_s`: the seconds since it started at which its
load phase ended (before it drained, say), where the steady-state window stops.

The contract with a load program (any language) is small: it is bounded by its own
flags (rate, count, duration) and stops by itself; every second it prints one JSON
object with cumulative counters (`{"t_s": 3.0, "sent": 1200, "ok": 900, ...}`); at the
end it prints one with `"done": true`. The harness records every numeric counter as a
series `load_<name>` and enforces a hard deadline in case the program does not stop.
A line may carry `"disturb_s": D` just before the program does something that disturbs
the service (a forced full GC, a class histogram): the D seconds after it are left out of
every fit (`leaklab.analysis.DISTURB_SERIES`).
An adaptive run may end the load early with SIGTERM: the program then stops sending,
lets requests in flight finish briefly and prints its final line, as at the end of its
duration (its exit status is not checked then: lab 03's load exits 1 when interrupted). A
self-driving client does the same in a grade, and also stops waiting for its backlog to
drain (`leaklab run` shows such a client's run whole).
The course's Go load programs get all of this from one module, the load kit
(`labs/loadkit`, whose package doc is the protocol's reference); `build.build_load`
builds each load beside it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leaklab.procs import ProcessGroup
from leaklab.samplers import Recorder


@dataclass
class LoadResult:
    """What the load program reported, and how it ended."""

    final: dict[str, Any] = field(default_factory=dict)
    last: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None
    timed_out: bool = False
    # An adaptive run asked the program to stop (SIGTERM) once its verdict was decided;
    # a program may then exit non-zero as interrupted, and its final line still counts.
    asked_to_stop: bool = False
    stop_asked_at: float | None = None  # monotonic: when the program was asked to stop


class LoadProgram:
    """A running load program whose stdout progress lines feed a recorder."""

    def __init__(self, group: ProcessGroup, recorder: Recorder) -> None:
        self.group = group
        self.recorder = recorder
        self.result = LoadResult()
        self._child: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None

    @property
    def last_pid(self) -> int | None:
        """The program's pid even after it exited (for snapshots that name it)."""
        return self._child.pid if self._child else None

    @property
    def pid(self) -> int | None:
        return self._child.pid if self._child and self._child.poll() is None else None

    def start(
        self, argv: list[str], cwd: Path, log: Path, env: dict[str, str] | None = None
    ) -> None:
        with log.open("ab") as sink:  # the child keeps its own copy of the descriptor
            self._child = self.group.start(
                argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=sink
            )
        self._reader = threading.Thread(target=self._read, name="load-reader", daemon=True)
        self._reader.start()

    def ask_to_stop(self) -> None:
        """SIGTERM to the program alone: it stops sending, waits briefly for requests in
        flight and prints its final line, as at the end of its duration. Once: a second
        signal means "now" to a program that handles Ctrl-C the usual way (lab 02's
        producer then exits at once, without its final line)."""
        if self.result.asked_to_stop:
            return
        if self._child is not None and self._child.poll() is None:
            self.result.asked_to_stop = True
            self.result.stop_asked_at = time.monotonic()
            os.killpg(self._child.pid, signal.SIGTERM)  # its own process group

    def running(self) -> bool:
        return self._child is not None and self._child.poll() is None

    def finish(self, deadline: float) -> LoadResult:
        """Wait for the program to stop by itself, or stop it at `deadline` (monotonic)."""
        assert self._child is not None
        try:
            self._child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.result.timed_out = True
            self.group.stop(self._child)
        if self._reader:
            self._reader.join(timeout=5)
        self.result.exit_code = self._child.returncode
        return self.result

    def _read(self) -> None:
        assert self._child is not None and self._child.stdout is not None
        for raw in self._child.stdout:
            try:
                doc = json.loads(raw)
            except ValueError:
                continue  # not a progress line; the program may print other things
            if not isinstance(doc, dict):
                continue
            now = time.monotonic()
            for key, value in doc.items():
                if key != "t_s" and isinstance(value, int | float) and not isinstance(value, bool):
                    self.recorder.add(f"load_{key}", float(value), at=now)
            if doc.get("done"):
                self.result.final = doc
            else:
                self.result.last = doc
