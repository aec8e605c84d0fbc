"""Samplers: RSS from psutil, plus the runtime's own series, into one recorder.

Each sampler is a daemon thread that appends `(monotonic time, series, value)` rows.
The kinds are generic on purpose: `http_json` polls a JSON endpoint (Go's expvar,
an actuator, a BEAM poller over HTTP) and `jsonl_file` tails a file of JSON lines
that a service writes (a Rust stats_alloc thread, a BEAM poller). A lab names the
fields it wants in lab.toml; nothing here knows about any one runtime.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

Row = tuple[float, str, float]


@dataclass
class Recorder:
    """Thread-safe store of samples, with the latest value of each series for display."""

    rows: list[Row] = field(default_factory=list)
    latest: dict[str, float] = field(default_factory=dict)
    peak: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, series: str, value: float, at: float | None = None) -> None:
        now = time.monotonic() if at is None else at
        with self._lock:
            self.rows.append((now, series, value))
            self.latest[series] = value
            self.peak[series] = max(value, self.peak.get(series, value))

    def snapshot(self) -> list[Row]:
        with self._lock:
            return list(self.rows)


class Sampler(threading.Thread):
    """A periodic poll on a fixed schedule (no drift), stopped by `stop()`."""

    def __init__(self, name: str, interval_s: float, poll: Callable[[], None]) -> None:
        super().__init__(name=f"sampler-{name}", daemon=True)
        self.interval_s = interval_s
        self.poll = poll
        self._stop_event = threading.Event()

    def run(self) -> None:
        next_at = time.monotonic()
        while not self._stop_event.is_set():
            self.poll()
            next_at += self.interval_s
            self._stop_event.wait(max(0.0, next_at - time.monotonic()))

    def stop(self) -> None:
        self.stop_soon()
        self.join(timeout=5)

    def stop_soon(self) -> None:
        """Ask the thread to stop after its current poll, without waiting for it."""
        self._stop_event.set()


def tree_rss(pid: int) -> float | None:
    """RSS of a process and all its descendants, in bytes (None once it is gone)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return None
    total = 0
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            total += proc.memory_info().rss
    return float(total)


class TreeRss:
    """`tree_rss` for a sampler: the process tree is looked up again only every
    `refresh_s`, or when a process in it has gone, because finding descendants walks
    every process on the machine (~3 ms of CPU) while reading one RSS costs ~0.05 ms."""

    def __init__(self, refresh_s: float = 2.0) -> None:
        self.refresh_s = refresh_s
        self._pid: int | None = None
        self._procs: list[psutil.Process] = []
        self._found_at = -float("inf")

    def __call__(self, pid: int) -> float | None:
        now = time.monotonic()
        if pid != self._pid or now - self._found_at >= self.refresh_s:
            try:
                root = psutil.Process(pid)
                self._procs = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                self._pid = None
                return None
            self._pid, self._found_at = pid, now
        total = 0
        for i, proc in enumerate(self._procs):
            try:
                total += proc.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                self._found_at = -float("inf")  # the tree changed: look it up next time
                if i == 0:
                    return None
        return float(total)


def rss_poll(
    recorder: Recorder, series: str, pid_of: Callable[[], int | None]
) -> Callable[[], None]:
    rss_of = TreeRss()

    def poll() -> None:
        pid = pid_of()
        if pid is not None and (rss := rss_of(pid)) is not None:
            recorder.add(series, rss)

    return poll


def cpu_poll(
    recorder: Recorder, series: str, pid_of: Callable[[], int | None], refresh_s: float = 2.0
) -> Callable[[], None]:
    """CPU seconds (user and system) the service's process tree has used since it
    started, read by the harness: what a fix costs in CPU, which no code in the service
    can misreport (a node-wide garbage collection loop trades memory for it). The tree
    is looked up again only every `refresh_s`, as for `TreeRss`."""
    tree: list[psutil.Process] = []
    found: list[float | int | None] = [None, -float("inf")]  # pid, when

    def poll() -> None:
        pid = pid_of()
        if pid is None:
            return
        now = time.monotonic()
        if pid != found[0] or now - float(found[1] or 0) >= refresh_s:
            try:
                root = psutil.Process(pid)
                tree[:] = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            found[:] = [pid, now]
        total = 0.0
        for proc in tree:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                times = proc.cpu_times()
                total += times.user + times.system
        recorder.add(series, total)

    return poll


def lookup(doc: Any, dotted: str) -> float | None:
    """`memstats.HeapInuse` -> doc["memstats"]["HeapInuse"], as a float if it is a number."""
    value = doc
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def http_json_poll(recorder: Recorder, url: str, series: dict[str, str]) -> Callable[[], None]:
    """GET a JSON document on one kept-alive connection (a new TCP connection and an
    HTTP client per sample cost the harness more CPU than the sample is worth)."""
    parts = urllib.parse.urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=2)

    def fetch() -> Any:
        conn.request("GET", target)
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise ValueError(f"HTTP {resp.status}")
        return json.loads(body)

    def poll() -> None:
        try:
            try:
                doc = fetch()
            except (http.client.HTTPException, ConnectionError):
                # A server that closed the kept-alive connection: once more on a new one.
                conn.close()
                doc = fetch()
        except (http.client.HTTPException, OSError, ValueError) as exc:
            conn.close()  # reconnect on the next poll
            recorder.errors[url] = str(exc)  # the service may be busy or gone; keep sampling
            return
        for name, path in series.items():
            if (value := lookup(doc, path)) is not None:
                recorder.add(name, value)

    return poll


class JsonlTail:
    """Reads the lines appended since the last poll; a partial last line waits for the next.

    A line is stamped when it is read, unless `time_field` names a field that holds its
    own time in seconds since `origin()` (monotonic), e.g. since the service started:
    then a series written at 10 Hz keeps 10 Hz even when the file is read at 2 Hz.
    """

    def __init__(
        self,
        recorder: Recorder,
        path: Path,
        series: dict[str, str],
        time_field: str | None = None,
        origin: Callable[[], float | None] = lambda: None,
    ) -> None:
        self.recorder = recorder
        self.path = path
        self.series = series
        self.time_field = time_field
        self.origin = origin
        self.offset = 0
        self.partial = b""
        self._lock = threading.Lock()  # the final drain may race the last scheduled poll

    def __call__(self) -> None:
        with self._lock:
            self._read()

    def _read(self) -> None:
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return  # the service has not written its first line yet
        self.offset += len(chunk)
        *lines, self.partial = (self.partial + chunk).split(b"\n")
        now = time.monotonic()
        origin = self.origin()
        for line in lines:
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            at = now
            if self.time_field and origin is not None:
                own = lookup(doc, self.time_field)
                at = now if own is None else origin + own
            for name, field_name in self.series.items():
                if (value := lookup(doc, field_name)) is not None:
                    self.recorder.add(name, value, at=at)
