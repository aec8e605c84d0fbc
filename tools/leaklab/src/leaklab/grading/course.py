"""The course's grader, not the learner's: which commit is "published", whether the
grader that runs is that commit's, and what the learner changed that a grade ignores.

A grade given `--course REF` (or `LEAKLAB_COURSE_REF`) takes the harness and
`labs/base.toml` from that commit, never from the working tree:

- `labs/base.toml` is read from REF (`leaklab.base` honours the variable), so the
  published trees a grade builds, loads and compares with are the course's;
- when the harness that started differs from REF's `tools/leaklab`, the grade runs
  REF's harness instead (exported by tree id, run with the same Python), so a learner's
  edit to the grader never grades their work;
- the learner's changes to `tools/`, `scripts/`, `.github/` and `labs/base.toml` are
  listed as ignored, and the result records the grader's tree id beside REF's.

What REF is: in a repository made from the course template (one squashed commit, no
course history) the course's published content is that first commit, so the workflow
passes the root commit; an instructor's Classroom 50 autograder passes the course tag it
pins (fetched from the course repository) when it can, the root commit otherwise. A tree
id is a hash of content, so the tree of `tools/leaklab` in a template copy's root commit
equals the course tag's: the board checks every result's grader tree against the
instructor's own. Without REF (a learner at home, the course's own CI), the working
tree's grader runs and the result says `published: null`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from leaklab import base
from leaklab.errors import LeakLabError
from leaklab.paths import work_dir

ENV = "LEAKLAB_COURSE_REF"
# Set in the grade a published grader runs, so it never re-runs itself.
REEXEC_ENV = "LEAKLAB_GRADER_REEXEC"
GRADER = "tools/leaklab"
# What the grader is made of: the harness and the result schema it validates with.
GRADER_PATHS = (GRADER, "docs/grading")
# The course's own machinery, never the learner's to change.
CONTROL_PATHS = ("tools", "scripts", ".github", "labs/base.toml")


def resolve(root: Path, ref: str) -> str:
    """The commit `ref` names ("root": the repository's first commit)."""
    if ref == "root":
        return root_commit(root)
    sha = base.git_or_empty(root, "rev-parse", "-q", "--verify", f"{ref}^{{commit}}")
    if not sha:
        raise LeakLabError(
            f"the course's published commit {ref!r} is not in this repository",
            "fetch it (git fetch <course repository> <tag>) or pass --course root",
        )
    return sha


def root_commit(root: Path) -> str:
    """The first commit of a template copy: the course as published."""
    roots = base.git_or_empty(root, "rev-list", "--max-parents=0", "HEAD").split()
    if len(roots) != 1:
        raise LeakLabError(
            "this repository has no history to find the course's published commit in"
            if not roots
            else f"this repository has {len(roots)} root commits; the published one is unclear",
            "clone with full history (actions/checkout with fetch-depth: 0), or pass "
            "--course <the course's tag or commit>",
        )
    return roots[0]


def tree(root: Path, commit: str, path: str = GRADER) -> str:
    return base.git_or_empty(root, "rev-parse", "-q", "--verify", f"{commit}:{path}")


def running_grader() -> Path:
    """The `tools/leaklab` folder of the harness this process runs."""
    return Path(__file__).resolve().parents[3]


def export(root: Path, commit: str) -> Path:
    """The published grader's files, laid out like the repository, cached by tree id."""
    trees = [tree(root, commit, path) for path in GRADER_PATHS]
    if not trees[0]:
        raise LeakLabError(
            f"the course's commit {commit[:12]} has no {GRADER}",
            "pass the course's published commit or tag with --course",
        )
    home = work_dir(root) / "grader" / "-".join(t[:12] or "none" for t in trees)
    if not (home / GRADER).is_dir():
        staging = home.with_name(home.name + ".staging")
        shutil.rmtree(staging, ignore_errors=True)
        for path, subtree in zip(GRADER_PATHS, trees, strict=True):
            if subtree:
                base.export_tree(root, subtree, "", staging / path)
        staging.rename(home)
    return home


def differs(root: Path, commit: str) -> bool:
    """Whether the running grader's source is not the published commit's."""
    published = export(root, commit) / GRADER / "src"
    return bool(base.differences(published, running_grader() / "src"))


def ignored(root: Path, commit: str) -> list[str]:
    """The learner's changes to the course's machinery: committed (even when the
    workflow has put the published files back in the working tree) or not."""
    committed = base.git_or_empty(root, "diff", "--name-only", commit, "HEAD", "--", *CONTROL_PATHS)
    changed = (
        committed
        + "\n"
        + base.git_or_empty(root, "diff", "--name-only", commit, "--", *CONTROL_PATHS)
    )
    added = base.git_or_empty(
        root, "ls-files", "--others", "--exclude-standard", "--", *CONTROL_PATHS
    )
    return sorted({*changed.split(), *added.split()})


def rerun_published(root: Path, commit: str, argv: list[str]) -> int:
    """Run this grade with the published harness; its exit code."""
    home = export(root, commit)
    env = {
        **os.environ,
        "PYTHONPATH": str(home / GRADER / "src"),
        REEXEC_ENV: "1",
        ENV: commit,
        "LEAKLAB_ROOT": str(root),
    }
    return subprocess.run([sys.executable, "-m", "leaklab", *argv], env=env, check=False).returncode


def identity(root: Path, commit: str | None) -> dict[str, Any]:
    """The `grader` object of a result: what ran, beside what the course published."""
    if os.environ.get(REEXEC_ENV) and commit:
        ran: str | None = tree(root, commit)  # exported from it by tree id
    elif running_grader() == (root / GRADER).resolve():
        ran = base.working_tree_id(root, GRADER)
    else:
        ran = None  # installed elsewhere: no tree to name
    published_tree = tree(root, commit) if commit else None
    same = None if commit is None else (ran == published_tree and not differs(root, commit))
    return {
        "tree": ran,
        "published_commit": commit,
        "published_tree": published_tree,
        "published": same,
    }


def learner(root: Path, editable: list[str]) -> dict[str, Any]:
    """The `learner` object: the commit graded and whether the tree had more."""
    commit = base.git_or_empty(root, "rev-parse", "-q", "--verify", "HEAD") or None
    dirty = bool(base.git_or_empty(root, "status", "--porcelain", "--", *editable))
    return {"commit": commit, "dirty": dirty}
