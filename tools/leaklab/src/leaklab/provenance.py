"""Where each committed dataset came from: a clean tree, at a commit in history, on the
pinned toolchains.

A run records the commit it was made at and whether the tree had uncommitted changes
(`git_commit`, `git_dirty`; `leaklab.runner`), and the toolchains it ran on (`versions`).
A dataset captured from a dirty tree, or at a commit that no clone has (amended or
rebased away), cannot be reproduced from the repository; one measured on a Go or a JDK
other than the pinned ones (`leaklab.toolchains`) is not the course's run. Re-capturing
waits for the labs to settle, so `datasets/RECAPTURE.toml` lists the datasets known not
to be clean yet, each with its reason: `leaklab dev check` prints those as warnings and
fails on any other, and on an entry that names no such dataset any more, so the list can
only shrink.
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

from leaklab.toolchains import GO_TOOLCHAIN, JAVA_MAJOR

DATASETS = Path("datasets")
DEBT = DATASETS / "RECAPTURE.toml"


@dataclass(frozen=True)
class Record:
    """A run's provenance as a dataset recorded it; `path` is relative to datasets/."""

    path: str
    commit: str
    dirty: bool | None
    versions: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Findings:
    problems: list[str]
    warnings: list[str]


def records(root: Path) -> list[Record]:
    """Every JSON under datasets/ that records a run's provenance (the run summaries;
    profiles and dumps beside them record none)."""
    found = []
    for path in sorted((root / DATASETS).rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(data, dict) and "git_commit" in data:
            dirty = data.get("git_dirty")
            versions = data.get("versions")
            found.append(
                Record(
                    path.relative_to(root / DATASETS).as_posix(),
                    str(data["git_commit"]),
                    dirty if isinstance(dirty, bool) else None,
                    tuple(sorted((str(k), str(v)) for k, v in versions.items()))
                    if isinstance(versions, dict)
                    else (),
                )
            )
    return found


def why_unclean(record: Record, history: set[str]) -> str | None:
    """Why a dataset cannot be reproduced from the repository, or None when it can."""
    if record.dirty is None:
        return "records no git_dirty (its tree's state is unknown)"
    if record.dirty:
        return "was captured from a tree with uncommitted changes (git_dirty: true)"
    if record.commit not in history:
        return f"was captured at commit {record.commit[:12]}, which is not in HEAD's history"
    return off_pin(dict(record.versions))


def off_pin(versions: dict[str, str]) -> str | None:
    """Why a run's recorded toolchains are not the pinned ones, or None when they are
    (or it records neither a Go nor a JDK)."""
    go = versions.get("go")
    if go is not None and GO_TOOLCHAIN not in go.split():
        return f"was measured on {go!r}, not the pinned {GO_TOOLCHAIN}"
    java = versions.get("java")
    if java is not None:
        major = re.search(r'version "(\d+)', java)
        if major is None or int(major.group(1)) != JAVA_MAJOR:
            return f"was measured on {java!r}, not the pinned JDK {JAVA_MAJOR}"
    return None


def check(root: Path) -> Findings:
    """Problems (a dataset not clean and not listed, a listed one now clean, a listed
    one with no reason, an unreadable list) and warnings (the listed debt)."""
    history, shallow = _history(root)
    unclean = {r.path: why for r in records(root) if (why := why_unclean(r, history))}
    try:
        debt = read_debt(root)
    except ValueError as exc:
        return Findings([str(exc)], [])
    problems: list[str] = []
    if shallow:
        problems.append(
            "this clone is shallow, so no dataset's commit can be found in its history: "
            "fetch the full history (`git fetch --unshallow`; actions/checkout with "
            "fetch-depth: 0)"
        )
    covered: set[str] = set()
    for entry, reason in debt.items():
        matched = {p for p in unclean if _covers(entry, p)}
        covered |= matched
        if not reason.strip():
            problems.append(f"{DEBT} lists {entry} without a reason: say why it waits")
        if not matched:
            problems.append(f"{DEBT} lists {entry}, which is clean now (or gone): remove the entry")
    warnings = []
    for path, why in sorted(unclean.items()):
        if path in covered:
            warnings.append(f"{DATASETS / path} {why} (listed in {DEBT})")
        else:
            problems.append(
                f"{DATASETS / path} {why}: re-capture it from a clean commit "
                f"(commit, then `leaklab capture`), or list it in {DEBT} with the reason"
            )
    return Findings(problems, warnings)


def read_debt(root: Path) -> dict[str, str]:
    """RECAPTURE.toml's `[datasets]` table: a path under datasets/ (a file, or a folder
    ending in `/` for everything under it) and the reason it is not re-captured yet."""
    path = root / DEBT
    if not path.is_file():
        return {}
    try:
        table = tomllib.loads(path.read_text()).get("datasets", {})
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{DEBT} is not valid TOML: {exc}") from None
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise ValueError(f"{DEBT}: [datasets] maps each path to its reason (a string)")
    return table


def _covers(entry: str, path: str) -> bool:
    return path == entry or (entry.endswith("/") and path.startswith(entry))


def _history(root: Path) -> tuple[set[str], bool]:
    """Every commit reachable from HEAD, and whether the clone is shallow."""

    def run(*args: str) -> str:
        result = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=False
        )
        return result.stdout if result.returncode == 0 else ""

    commits = set(run("rev-list", "HEAD").split())
    shallow = run("rev-parse", "--is-shallow-repository").strip() == "true"
    return commits, shallow
