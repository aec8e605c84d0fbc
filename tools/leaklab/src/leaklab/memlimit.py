"""A run under a memory limit (`leaklab run NN --memory-limit 256M`): the service in a
memory cgroup of its own, and its OOM kill recorded.

The kernel's memory controller does what a container runtime's limit does: when the
group's memory (RSS, page cache, kernel memory) reaches the limit and nothing can be
reclaimed, the OOM killer sends SIGKILL and counts an `oom_kill` event. Both cgroup
versions are tried: v2 (`memory.max`, `memory.events`) where its memory controller is
enabled, else v1's memory controller (`memory.limit_in_bytes`, `memory.oom_control`).
Where neither gives a writable group (no permission, no controller) the run says so in
one line and goes on without the limit; nothing else depends on it.

The service is put in the group before it runs a line of its own code: it is started
through `sh`, which writes its own pid into the group and then `exec`s the service.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from leaklab.errors import UsageError
from leaklab.limit import describe_size, parse_size

CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class Cgroup:
    """A memory cgroup this harness made for one run."""

    path: Path
    version: int  # 1 or 2
    limit_bytes: int

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv`, started inside the group (its pid joins before it executes)."""
        procs = self.path / "cgroup.procs"
        return ["sh", "-c", f'echo $$ > "{procs}" && exec "$@"', "leaklab-limited", *argv]

    def oom_kills(self) -> int:
        """How many processes of the group the OOM killer has killed so far."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            text = (self.path / name).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def usage(self) -> float | None:
        """The memory the kernel charges to the group now (what it holds to the limit):
        RSS and page cache and kernel memory of every process in it."""
        name = "memory.current" if self.version == 2 else "memory.usage_in_bytes"
        try:
            return float((self.path / name).read_text())
        except (OSError, ValueError):
            return None

    def remove(self, wait_s: float = 3.0) -> None:
        """Remove the group once its processes are gone. A process killed a moment ago
        may still be leaving it (a killed service's orphaned children, reaped by init),
        so the removal is retried for a few seconds; a group still busy then stays."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() >= deadline:
                    return
                time.sleep(0.1)


def create(limit_bytes: int, name: str) -> tuple[Cgroup | None, str]:
    """A memory cgroup limited to `limit_bytes`, or None and the reason there is none."""
    reasons = []
    for maker in (_v2, _v1):
        try:
            group = maker(limit_bytes, name)
        except OSError as exc:
            reasons.append(f"{exc.strerror or exc} ({exc.filename or ''})")
            continue
        if group is not None:
            return group, ""
    return None, "; ".join(reasons) or "no cgroup memory controller is mounted"


def _own_path(controller: str) -> str:
    """This process's cgroup path in a hierarchy (v1: the controller's line; v2: '0::')."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        num, controllers, path = line.split(":", 2)
        if (controller == "" and num == "0") or controller in controllers.split(","):
            return path.lstrip("/")
    return ""


def _v2(limit_bytes: int, name: str) -> Cgroup | None:
    for mount in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
        if not (mount / "cgroup.controllers").is_file():
            continue
        parent = mount / _own_path("")
        if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
            continue  # a child would have no memory.max
        group = parent / name
        group.mkdir()
        (group / "memory.max").write_text(str(limit_bytes))
        with contextlib.suppress(OSError):
            (group / "memory.swap.max").write_text("0")  # the limit is memory, not swap
        return Cgroup(group, 2, limit_bytes)
    return None


def _v1(limit_bytes: int, name: str) -> Cgroup | None:
    mount = CGROUP_ROOT / "memory"
    if not (mount / "memory.limit_in_bytes").is_file():
        return None
    for parent in (mount / _own_path("memory"), mount):
        group = parent / name
        try:
            group.mkdir()
        except OSError:
            if parent == mount:
                raise
            continue
        (group / "memory.limit_in_bytes").write_text(str(limit_bytes))
        with contextlib.suppress(OSError):  # only where swap is accounted
            (group / "memory.memsw.limit_in_bytes").write_text(str(limit_bytes))
        return Cgroup(group, 1, limit_bytes)
    return None


def group_name() -> str:
    return f"leaklab-{os.getpid()}"


def check(lab_series: str, size: str, idle_rss: tuple[float, str] | None) -> int:
    """The limit a run was asked for, in bytes, or the one line that says why not:
    an unparseable size, a lab whose verdict series is not memory, a limit the service's
    idle RSS is already above (from the lab's published runs)."""
    limit_bytes = parse_size(size)
    if not lab_series.endswith("_bytes"):
        raise UsageError(
            f"--memory-limit needs a lab whose verdict series is memory; this lab's is "
            f"{lab_series}",
            "run it without --memory-limit",
        )
    if idle_rss is not None and idle_rss[0] >= limit_bytes:
        rss, where = idle_rss
        raise UsageError(
            f"--memory-limit {size} ({describe_size(limit_bytes)}) is below the service's "
            f"idle RSS ({describe_size(rss)} in {where})",
            "give a limit above it: the service would be killed before the load starts",
        )
    return limit_bytes


def idle_rss(dataset_dir: Path, variant: str) -> tuple[float, str] | None:
    """The service's RSS before its load, from the lab's published run of this variant
    (or of broken): the median of its samples before t_s = 0, or its first sample."""
    from leaklab import dataset

    for name in (variant, "broken"):
        path = dataset_dir / f"{name}.json"
        if not path.is_file():
            continue
        rss = dataset.read(path).series("rss_bytes")
        before = rss[rss["t_s"] <= 0]["value"]
        values = before if len(before) else rss["value"].head(1)
        if len(values):
            return float(values.median()), str(path.relative_to(dataset_dir.parent.parent))
    return None
