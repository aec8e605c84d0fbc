"""Fixtures: a throwaway Leak Lab repository holding one fake lab, committed to git."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from leaklab import report
from leaklab.report import RunSummary
from leaklab.runner import RunOptions, RunResult, run
from leaklab.spec import Lab

FAKELAB = Path(__file__).parent / "fakelab"


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def publish(root: Path, message: str) -> None:
    """Commit everything as the course publishes a lab: its trees recorded in
    labs/base.toml (`leaklab dev lock`), so `broken` and the grade find them."""
    from leaklab.base import write_lock
    from leaklab.spec import lab_slugs

    write_lock(root, lab_slugs(root))
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", message)


@pytest.fixture
def fake_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repo with labs/90-fake (service, load, lab.toml) and its one-patch solution."""
    root = tmp_path / "repo"
    lab = root / "labs" / "90-fake"
    (lab / "service").mkdir(parents=True)
    (lab / "load").mkdir()
    (root / "tools" / "leaklab").mkdir(parents=True)
    (root / "solutions" / "90-fake").mkdir(parents=True)
    shutil.copy(FAKELAB / "lab.toml", lab / "lab.toml")
    shutil.copy(FAKELAB / "server.py", lab / "service" / "server.py")
    shutil.copy(FAKELAB / "load.py", lab / "load" / "load.py")
    shutil.copy(FAKELAB / "01-forget.patch", root / "solutions" / "90-fake" / "01-forget.patch")
    shutil.copy(FAKELAB / "answer.toml", root / "solutions" / "90-fake" / "answer.toml")
    git(root, "init", "-q")
    publish(root, "fake lab")
    monkeypatch.setenv("LEAKLAB_ROOT", str(root))
    return root


def fake_processes(root: Path) -> list[psutil.Process]:
    """Live processes started from the fake repo (services, loads, their children)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        try:
            text = " ".join(proc.info["cmdline"] or []) + " " + (proc.info["cwd"] or "")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if str(root) in text:
            found.append(proc)
    return found


@pytest.fixture
def no_orphans(fake_repo: Path) -> Iterator[Path]:
    """Fails the test if any process started from the fake repo outlives it."""
    yield fake_repo
    survivors = fake_processes(fake_repo)
    for proc in survivors:
        proc.kill()
    assert not survivors, f"orphan processes: {[p.info['cmdline'] for p in survivors]}"


def start_run(
    root: Path, lab: str, ready: str, duration: str = "30"
) -> tuple[subprocess.Popen[str], list[str]]:
    """`leaklab run LAB --duration 30 --fixed-duration` as a child process, handed back
    once a line of its output contains `ready` (at most 60 s): the start of every Ctrl-C
    test (a whole run: an adaptive one could end before the Ctrl-C)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "leaklab", "run", lab, "--duration", duration, "--fixed-duration"],
        env={**os.environ, "LEAKLAB_ROOT": str(root)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    output = []
    deadline = time.monotonic() + 60
    for line in proc.stdout:
        output.append(line)
        if ready in line or time.monotonic() > deadline:
            break
    return proc, output


def interrupt(proc: subprocess.Popen[str], output: list[str]) -> None:
    """Ctrl-C the run: it must exit 130 and say it wrote nothing."""
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, "".join(output) + rest
    assert "nothing written" in rest


def quiet(_: str) -> None:
    """A run's log, silenced."""


def broken_grows_fixed_stays_flat(lab: Lab) -> tuple[RunResult, RunSummary, RunSummary]:
    """Run broken then fixed and assert their verdicts; the broken run and both summaries."""
    broken = run(lab, RunOptions("broken", order=0), log=quiet)
    fixed = run(lab, RunOptions("fixed", order=1), log=quiet)
    b, f = report.summarise(lab, broken.data), report.summarise(lab, fixed.data)
    assert b.verdict == "grows", b
    assert f.verdict == "flat", f
    return broken, b, f


def sharing_a_cold_cache(lab: Lab) -> bool:
    """Builds of this lab that two workers would do at once, one of them for nothing:
    cargo's (`touch_sources`: one target folder and its lock per lab, so the second
    worker waits) and `go test -race`'s (on a cold Go cache the first ones compile the
    race-instrumented standard library, and Go does not share a compile in progress
    between processes: 124 s and 113 s side by side in a cold CI run)."""
    race = any("-race" in command.argv for command in lab.build.test)
    return lab.build.touch_sources or race


@functools.cache
def labs_sharing_a_cold_cache() -> tuple[str, ...]:
    from leaklab.spec import lab_slugs, load_lab

    return tuple(slug for slug in lab_slugs() if sharing_a_cold_cache(load_lab(slug)))


def xdist_group_of(nodeid: str) -> str | None:
    """The lab whose cache this test's builds share with its other tests', if any."""
    for slug in labs_sharing_a_cold_cache():
        if (slug in nodeid or f"[{slug[:2]}]" in nodeid) and "notebook" not in nodeid:
            return slug
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With `--dist loadgroup` (make test) the tests that build such a lab go to one
    worker, one after another (its notebooks do not build); elsewhere the mark does
    nothing."""
    for item in items:
        if group := xdist_group_of(item.nodeid):
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """xdist groups a test by a suffix its worker writes into the test's id; pytest 9.2
    ignores that write (pytest-dev/pytest-xdist#1386) and the groups vanish without a
    word, so stop instead (tools/leaklab/pyproject.toml keeps pytest below 9.2)."""
    if node.config.getvalue("dist") != "loadgroup":
        return
    lost = [i for i in ids if xdist_group_of(i) and "@" not in i.rsplit("]", 1)[-1]]
    if lost:
        raise pytest.UsageError(f"--dist loadgroup did not group {len(lost)} tests: {lost[0]}")
