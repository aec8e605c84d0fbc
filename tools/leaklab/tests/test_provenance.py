"""`leaklab dev check` rejects a committed dataset that the repository cannot reproduce
(captured from a dirty tree, or at a commit not in history) unless the committed debt
list names it, and rejects a debt entry that is no longer needed (the list only shrinks)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import git

from leaklab import dev, provenance
from leaklab.paths import repo_root

ROOT = repo_root()

DATASET = "90-fake/broken.json"


def head(root: Path) -> str:
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    return out.stdout.strip()


def capture(
    root: Path,
    commit: str,
    dirty: bool | None,
    name: str = DATASET,
    versions: dict[str, str] | None = None,
) -> None:
    """A run summary as the runner writes it (only the provenance fields matter here)."""
    path = root / "datasets" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    fields: dict[str, object] = {"lab": "90-fake", "variant": "broken", "git_commit": commit}
    if dirty is not None:
        fields["git_dirty"] = dirty
    if versions is not None:
        fields["versions"] = versions
    path.write_text(json.dumps(fields))


def owe(root: Path, entries: dict[str, str]) -> None:
    lines = ["[datasets]", *(f'"{k}" = "{v}"' for k, v in entries.items())]
    (root / "datasets" / "RECAPTURE.toml").write_text("\n".join(lines) + "\n")


def test_a_clean_dataset_at_a_commit_in_history_passes(fake_repo: Path) -> None:
    capture(fake_repo, head(fake_repo), dirty=False)
    # profiles and dumps beside a run record no provenance and are not runs
    (fake_repo / "datasets" / "90-fake" / "dhat-heap.json").write_text('{"mode": "heap"}')
    assert provenance.check(fake_repo) == provenance.Findings([], [])


@pytest.mark.parametrize(("dirty", "why"), [(True, "git_dirty: true"), (None, "no git_dirty")])
def test_a_dirty_or_unknown_tree_fails(fake_repo: Path, dirty: bool | None, why: str) -> None:
    capture(fake_repo, head(fake_repo), dirty=dirty)
    problems = provenance.check(fake_repo).problems
    assert len(problems) == 1 and DATASET in problems[0] and why in problems[0]


def test_a_commit_not_in_history_fails(fake_repo: Path) -> None:
    """An amended commit: its id is real but no longer reachable from HEAD."""
    git(fake_repo, "commit", "-q", "--allow-empty", "-m", "captured here")
    gone = head(fake_repo)
    git(fake_repo, "commit", "-q", "--amend", "--allow-empty", "-m", "amended")
    capture(fake_repo, gone, dirty=False)
    problems = provenance.check(fake_repo).problems
    assert (
        len(problems) == 1 and gone[:12] in problems[0] and "not in HEAD's history" in problems[0]
    )
    capture(fake_repo, "unknown", dirty=False)  # captured outside a git clone
    assert "not in HEAD's history" in provenance.check(fake_repo).problems[0]


@pytest.mark.parametrize(
    ("versions", "why"),
    [
        ({"go": "go version go1.26.8 linux/amd64"}, "not the pinned go1.27.3"),
        ({"java": 'openjdk version "17.0.15" 2025-04-15'}, "not the pinned JDK 25"),
    ],
)
def test_a_run_on_another_toolchain_fails(
    fake_repo: Path, versions: dict[str, str], why: str
) -> None:
    """Clean and in history, but measured on a Go or a JDK the course no longer pins."""
    capture(fake_repo, head(fake_repo), dirty=False, versions=versions)
    problems = provenance.check(fake_repo).problems
    assert len(problems) == 1 and DATASET in problems[0] and why in problems[0], problems
    pinned = {
        "go": "go version go1.27.3 linux/amd64",
        "java": 'openjdk version "25.0.3" 2026-04-21 LTS',
    }
    capture(fake_repo, head(fake_repo), dirty=False, versions={**pinned, "python": "3.11.7"})
    assert provenance.check(fake_repo).problems == []


def test_a_listed_dataset_warns_and_passes(fake_repo: Path) -> None:
    capture(fake_repo, head(fake_repo), dirty=True)
    capture(fake_repo, head(fake_repo), dirty=True, name="90-fake/burst/one.json")
    owe(fake_repo, {DATASET: "waits for the lab's rewrite", "90-fake/burst/": "ditto"})
    findings = provenance.check(fake_repo)
    assert findings.problems == []
    assert len(findings.warnings) == 2
    assert all("listed in datasets/RECAPTURE.toml" in w for w in findings.warnings)


def test_a_stale_entry_fails(fake_repo: Path) -> None:
    """Re-captured clean, but still listed: the entry must go."""
    capture(fake_repo, head(fake_repo), dirty=False)
    owe(fake_repo, {DATASET: "waits for the lab's rewrite", "90-fake/gone.json": "removed"})
    problems = provenance.check(fake_repo).problems
    assert len(problems) == 2
    assert all("clean now (or gone): remove the entry" in p for p in problems)


def test_an_entry_needs_a_reason(fake_repo: Path) -> None:
    capture(fake_repo, head(fake_repo), dirty=True)
    owe(fake_repo, {DATASET: " "})
    assert provenance.check(fake_repo).problems == [
        f"datasets/RECAPTURE.toml lists {DATASET} without a reason: say why it waits"
    ]


def test_no_tracked_file_is_one_git_add_would_leave_out() -> None:
    """A copy of the course committed with `git add -A` (a template copy, a learner's
    first commit) holds exactly the tracked files: an ignore rule that matches a tracked
    file drops it there, and the lab's published tree then exists in no commit."""
    ignored = subprocess.run(
        ["git", "ls-files", "--cached", "--ignored", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert ignored == []


def test_the_course_s_datasets_are_clean_or_listed() -> None:
    assert provenance.check(ROOT).problems == []


def test_dev_check_fails_on_them_and_warns_on_the_listed(fake_repo: Path) -> None:
    capture(fake_repo, head(fake_repo), dirty=True)
    assert any(p.startswith(f"datasets/{DATASET} was captured") for p in dev.check(fake_repo))
    owe(fake_repo, {DATASET: "waits for the lab's rewrite"})
    assert not any(DATASET in p for p in dev.check(fake_repo))
    assert dev.warnings(fake_repo) == [
        f"datasets/{DATASET} was captured from a tree with uncommitted changes "
        "(git_dirty: true) (listed in datasets/RECAPTURE.toml)"
    ]
