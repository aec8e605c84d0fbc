"""Process lifecycle: every child in its own process group, every group stopped at the end.

A run starts a service and a load program. Both go in new sessions (so a Ctrl-C in the
terminal reaches only the harness, which then stops them in order), and `ProcessGroup`
guarantees that on success, failure or interrupt alike no child outlives the run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import IO

from leaklab.errors import LeakLabError

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port that is free on loopback right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return True
        return False


class ProcessGroup:
    """Children started in their own sessions; `stop_all` ends every one of them.

    Use as a context manager: leaving the block, by any path, sends SIGTERM to each
    group (newest first), waits, then SIGKILLs what is left.
    """

    def __init__(self, term_timeout_s: float = 5.0) -> None:
        self.children: list[subprocess.Popen[bytes]] = []
        self.term_timeout_s = term_timeout_s

    def __enter__(self) -> ProcessGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()

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
                env={**os.environ, **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise LeakLabError(
                f"cannot start {argv[0]}: not found", "build the lab first"
            ) from None
        self.children.append(child)
        return child

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
        return child.returncode

    def stop_all(self) -> None:
        while self.children:
            self.stop(self.children.pop())


def wait_ready(
    child: subprocess.Popen[bytes],
    url: str | None,
    port: int,
    timeout_s: float,
    describe_failure: Callable[[], str],
    what: str = "the service",
    probe: bool = True,
) -> float:
    """Wait until the service answers its readiness probe; return the seconds it took.

    With an HTTP path, ready means a 2xx answer; without one, an accepted TCP connection;
    with `probe=False`, only that the child is still running a moment after its start.
    A child that exits first, or a probe that never passes, is a clear error.
    """
    start = time.monotonic()
    if not probe:
        time.sleep(0.1)
        if child.poll() is not None:
            raise LeakLabError(
                f"{what} exited with code {child.returncode} right after its start:\n"
                f"{describe_failure()}",
                "read the log above; is the build current?",
            )
        return time.monotonic() - start
    deadline = start + timeout_s
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise LeakLabError(
                f"{what} exited with code {child.returncode} before it was ready:\n"
                f"{describe_failure()}",
                "read the service log above; is the port free and the build current?",
            )
        if _probe(url, port):
            return time.monotonic() - start
        time.sleep(0.1)
    raise LeakLabError(
        f"{what} was not ready within {timeout_s:.0f} s (probe: {url or f'tcp :{port}'}):\n"
        f"{describe_failure()}",
        "check the service log above, or raise [service.ready] timeout_s in lab.toml",
    )


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
