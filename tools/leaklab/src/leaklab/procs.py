"""Process lifecycle: every child in its own process group, every group stopped at the end.

A run starts a service, a load program and helper commands (snapshots, version probes).
Each goes in a new session (so a Ctrl-C in the terminal reaches only the harness, which
then stops them in order), and `ProcessGroup` guarantees that on success, failure or
interrupt alike no child, nor anything the child started, outlives the run.

Only a harness killed with SIGKILL cannot clean up after itself. For that case a run
records its process groups in a pid file (`Ledger`), and the next run or `leaklab
doctor` stops what a dead harness left (`reap`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO, Any

import psutil

from leaklab import toolchains
from leaklab.errors import LeakLabError
from leaklab.paths import work_dir

LOOPBACK = "127.0.0.1"
INTERRUPT_GRACE_S = 1.0  # after a Ctrl-C, each group's moment to exit before SIGKILL


def free_port() -> int:
    """A TCP port that is free on loopback right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def port_in_use(port: int) -> bool:
    """Whether a service could not listen on `port` now.

    The services set SO_REUSEADDR, as servers do, so a port held only by TIME-WAIT
    sockets (the connections of a run that just ended) is free for them: bind the same
    way, or `--port` right after a run would be refused for a minute."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return True
        return False


class ProcessGroup:
    """Children started in their own sessions; `stop_all` ends every one of them.

    Use as a context manager: leaving the block, by any path, sends SIGTERM to each
    group (newest first), waits, then SIGKILLs what is left. With a `ledger`, every
    group is also on disk until it is stopped, for `reap` to find if the harness dies.
    """

    def __init__(self, term_timeout_s: float = 5.0, ledger: Ledger | None = None) -> None:
        self.children: list[subprocess.Popen[bytes]] = []
        self.term_timeout_s = term_timeout_s
        self.ledger = ledger

    def __enter__(self) -> ProcessGroup:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: object, tb: object) -> None:
        # Ctrl-C: the user is waiting; give each group a moment, not the usual grace.
        interrupted = exc_type is not None and issubclass(exc_type, KeyboardInterrupt)
        self.stop_all(INTERRUPT_GRACE_S if interrupted else None)

    def start(
        self,
        argv: list[str],
        *,
        cwd: Path,
        env: dict[str, str] | None = None,
        stdout: IO[bytes] | int | None = None,
        stderr: IO[bytes] | int | None = None,
    ) -> subprocess.Popen[bytes]:
        try:
            child = subprocess.Popen(
                argv,
                cwd=cwd,
                # The course's Go and JDK (leaklab.toolchains), below the caller's own.
                env={**os.environ, **toolchains.env(), **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise not_found(argv[0]) from None
        self.children.append(child)
        if self.ledger is not None:
            self.ledger.add(child.pid, argv)
        return child

    def run(
        self,
        argv: list[str],
        *,
        cwd: Path,
        timeout_s: float,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run a helper command to its end and capture its output, like `subprocess.run`,
        but in this group: on a timeout (`subprocess.TimeoutExpired`), an error or a
        Ctrl-C, everything it started is stopped with it, not only its first process
        (a `bash -c "jcmd ... | awk"` leaves jcmd and awk behind otherwise)."""
        child = self.start(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = child.communicate(timeout=timeout_s)
        except KeyboardInterrupt:
            self.stop(child, signal.SIGKILL)  # a snapshot is not worth the user's wait
            raise
        finally:
            self.stop(child)  # also sweeps what it left running in its group
            self.children.remove(child)
            for pipe in (child.stdout, child.stderr):
                if pipe is not None:
                    pipe.close()
        return subprocess.CompletedProcess(argv, child.returncode, out, err)

    def stop(self, child: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> int | None:
        """Stop one child's whole group: `sig` first, SIGKILL after the timeout."""
        if child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=self.term_timeout_s)
        # The leader may be gone while its children live on: always sweep the group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=self.term_timeout_s)
        if self.ledger is not None:
            self.ledger.discard(child.pid)
        return child.returncode

    def stop_all(self, grace_s: float | None = None) -> None:
        """Stop every group: SIGTERM to all at once (newest first), one shared wait of
        `grace_s` (the timeout by default), then SIGKILL to every group. At once, not one
        after another: a wait per child added up to more than 30 s on a loaded machine
        after a Ctrl-C (the service, the load, a snapshot, each slow to die)."""
        children, self.children = self.children[::-1], []
        for child in children:
            if child.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + (self.term_timeout_s if grace_s is None else grace_s)
        for child in children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=max(0.0, deadline - time.monotonic()))
        for child in children:  # the leader may be gone while its children live on
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)
        for child in children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=self.term_timeout_s)
            if self.ledger is not None:
                self.ledger.discard(child.pid)


def run_captured(
    argv: list[str], *, cwd: Path, timeout_s: float, ledger: Ledger | None = None
) -> subprocess.CompletedProcess[bytes]:
    """`ProcessGroup.run` in a group of its own: a helper command outside a run's group."""
    with ProcessGroup(ledger=ledger) as group:
        return group.run(argv, cwd=cwd, timeout_s=timeout_s)


def not_found(program: str) -> LeakLabError:
    """The error for a program that cannot be started: a file the build should have
    written is missing, or a tool (java, mix) is not installed, which no build fixes."""
    if os.sep in program:
        return LeakLabError(
            f"cannot start {program}: the file does not exist", "build the lab first"
        )
    return LeakLabError(
        f"cannot start {program}: it is not installed (not found on PATH)",
        "install it: `leaklab doctor` says how, and which labs need it",
    )


class Ledger:
    """A pid file: the process groups one harness started and has not stopped yet.

    Each group is recorded with its leader's start time, so a pid the system has since
    given to another process is never mistaken for ours. The file names its owner (the
    harness, also with its start time): `reap` touches only files whose owner is dead.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        me = psutil.Process()
        self.owner = {"pid": me.pid, "started": me.create_time()}
        self.groups: dict[int, dict[str, Any]] = {}

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, pid: int, argv: list[str]) -> None:
        try:
            started = psutil.Process(pid).create_time()
        except psutil.NoSuchProcess:
            return  # gone already: nothing to reap
        self.groups[pid] = {"started": started, "command": " ".join(argv)[:200]}
        self._save()

    def discard(self, pid: int) -> None:
        if self.groups.pop(pid, None) is not None:
            self._save()

    def close(self) -> None:
        """A clean end: every group was stopped, nothing is left to reap."""
        self.path.unlink(missing_ok=True)

    def _save(self) -> None:
        doc = {"owner": self.owner, "groups": {str(k): v for k, v in self.groups.items()}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(json.dumps(doc))
        tmp.replace(self.path)


def ledger_folder(root: Path) -> Path:
    """Where runs keep their pid files: `.leaklab/runs/pids/<harness pid>.json`."""
    return work_dir(root) / "runs" / "pids"


def reap(folder: Path) -> list[str]:
    """Stop the process groups that harnesses killed without cleaning up left behind.

    Reads every pid file in `folder`; a file whose owner still runs is another run in
    progress and is left alone. Returns one description per group stopped."""
    reaped: list[str] = []
    for path in sorted(folder.glob("*.json")):
        try:
            doc = json.loads(path.read_text())
            owner, groups = doc["owner"], doc["groups"]
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)  # half-written by a harness killed mid-write
            continue
        if _same_process(int(owner["pid"]), float(owner["started"])):
            continue
        for pgid, group in groups.items():
            if _kill_group(int(pgid), float(group["started"])):
                reaped.append(f"{group['command']} (pid {pgid})")
        path.unlink(missing_ok=True)
    return reaped


def _same_process(pid: int, started: float) -> bool:
    """Whether `pid` is still the process that started at `started` (not a recycled pid)."""
    now = _started(pid)
    return now is not None and abs(now - started) < 0.05


def _started(pid: int) -> float | None:
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.NoSuchProcess:
        return None


def _kill_group(pgid: int, started: float) -> bool:
    """SIGKILL a recorded group unless its id now belongs to someone else.

    A live process with the group's id must be our leader (same start time). With the
    leader gone, members may live on (a service's children); Linux does not give a pid
    to a new process while a group of that id exists, so the group is still ours."""
    leader = _started(pgid)
    if leader is not None and abs(leader - started) >= 0.05:
        return False  # the pid was recycled: not ours
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


@dataclass(frozen=True)
class Probe:
    """How to know a started process is ready: a 2xx from `url`, else an accepted TCP
    connection on `port`; when not `enabled`, only that it still runs a moment later."""

    port: int
    url: str | None = None
    timeout_s: float = 30.0
    enabled: bool = True


def wait_ready(
    child: subprocess.Popen[bytes],
    probe: Probe,
    describe_failure: Callable[[], str],
    what: str = "the service",
) -> float:
    """Wait until the child passes its readiness probe; return the seconds it took.
    A child that exits first, or a probe that never passes, is a clear error."""
    start = time.monotonic()
    describe = _or_empty(describe_failure)
    if not probe.enabled:
        time.sleep(0.1)
        if child.poll() is not None:
            raise LeakLabError(
                f"{what} exited with code {child.returncode} right after its start:\n{describe()}",
                "read the log above; is the build current?",
            )
        return time.monotonic() - start
    deadline = start + probe.timeout_s
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise LeakLabError(
                f"{what} exited with code {child.returncode} before it was ready:\n{describe()}",
                "read the service log above; is the port free and the build current?",
            )
        if _probe(probe.url, probe.port):
            return time.monotonic() - start
        time.sleep(0.1)
    raise LeakLabError(
        f"{what} was not ready within {probe.timeout_s:.0f} s "
        f"(probe: {probe.url or f'tcp :{probe.port}'}):\n"
        f"{describe()}",
        "check the service log above, or raise [service.ready] timeout_s in lab.toml",
    )


def _or_empty(describe_failure: Callable[[], str]) -> Callable[[], str]:
    """A log tail, or a word that the log is empty (not a colon followed by nothing)."""

    def describe() -> str:
        return describe_failure().rstrip() or "(its log is empty: it printed nothing)"

    return describe


def _probe(url: str | None, port: int) -> bool:
    if url is None:
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.5):
                return True
        except OSError:
            return False
    try:
        with urllib.request.urlopen(url, timeout=1) as resp:
            return 200 <= int(resp.status) < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


@contextlib.contextmanager
def interrupts_as_keyboard_interrupt() -> Iterator[None]:
    """Treat SIGTERM/SIGHUP like Ctrl-C, so every exit path runs the same cleanup."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
