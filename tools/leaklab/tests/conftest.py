"""Fixtures: a throwaway Leak Lab repository holding one fake lab, committed to git."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

FAKELAB = Path(__file__).parent / "fakelab"
REPO_ROOT = Path(__file__).resolve().parents[3]


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


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
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "fake lab")
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
