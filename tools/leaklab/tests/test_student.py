"""A simulated student, end to end: a repository made from the course template (one
squashed commit), a valid fix of lab 01 committed, edits to what the grade measures
with committed too, and the classroom workflow's own command for lab 01."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import git

from leaklab import base
from leaklab.grading import diff
from leaklab.spec import lab_slugs, load_lab
from leaklab.variants import materialise

REPO = Path(__file__).resolve().parents[3]
SLUG = "01-go-bulk-abort"
FIX = Path(__file__).parent / "grading" / SLUG / "pass" / "receive-for-the-leaver.patch"


def template_copy(dest: Path) -> Path:
    """The tracked files as they are, in a new repository with a single commit."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    git(dest, "init", "-q")
    # -f: the template has every tracked file, those an ignore rule matches included.
    git(dest, "add", "-f", ".")
    git(dest, "commit", "-q", "-m", "Initial commit")
    # The workflow's setup-command installed lab 01's toolchain: this machine has it.
    (dest / ".leaklab" / "setup").mkdir(parents=True)
    (dest / ".leaklab" / "setup" / "lab-01").touch()
    return dest


def test_every_published_tree_is_in_a_template_copy(tmp_path: Path) -> None:
    """A template copy has the tracked files in one new commit and none of the course's
    other objects: every tree labs/base.toml records must be among them, or `broken`,
    `diff` and `grade` fail in every student's repository (and in CI's clone)."""
    student = template_copy(tmp_path / "student")
    for slug in lab_slugs(student):
        found = base.find(student, slug)
        for key in base.FOLDERS:
            assert found.tree(key) == base.committed_tree(student, f"{base.FOLDERS[key]}/{slug}")


def classroom_command(number: str) -> list[str]:
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "classroom.yml").read_text())
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    graders = [s["with"] for s in steps if "autograding-command-grader" in s.get("uses", "")]
    command = next(g["command"] for g in graders if f" grade {number} " in f"{g['command']} ")
    argv = command.split()
    assert argv[0] == ".venv/bin/leaklab", command
    return [sys.executable, "-m", "leaklab", *argv[1:]]


@pytest.mark.leak
def test_a_student_commits_a_fix_and_the_classroom_grade_passes(tmp_path: Path) -> None:
    student = template_copy(tmp_path / "student")
    lab_dir = student / "labs" / SLUG
    git(student, "apply", f"--directory=labs/{SLUG}/service", str(FIX))
    git(student, "commit", "-qam", "fix the abort path")
    # What the grade measures with, edited and committed: a looser verdict rule and a
    # reference run that asks for less. The grade must ignore both, and say so.
    toml = lab_dir / "lab.toml"
    rule = toml.read_text()
    assert "flat_below = 10.0" in rule  # the published rule, edited below
    toml.write_text(rule.replace("flat_below = 10.0", "flat_below = 500.0"))
    reference = student / "datasets" / SLUG / "fixed.json"
    reference.write_text(reference.read_text().replace('"ok": ', '"ok": 1, "was_ok": '))
    git(student, "commit", "-qam", "make it easier")

    started = time.monotonic()
    grading = subprocess.Popen(
        classroom_command("01"),
        cwd=student,
        env={**os.environ, "LEAKLAB_ROOT": str(student), "COLUMNS": "120"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert grading.stdout is not None
    lines, refused_after = [], None
    for line in grading.stdout:
        lines.append(line)
        if line.startswith("ignored (") and refused_after is None:
            refused_after = time.monotonic() - started
            assert not any("build" in seen for seen in lines[:-1]), "said before any build"
    assert grading.wait(timeout=600) == 0, "".join(lines[-40:])
    print(f"the grade named the ignored edits after {refused_after:.1f} s")
    assert refused_after is not None and refused_after < 30
    report = "".join(lines)
    assert f"labs/{SLUG}/lab.toml" in report and f"datasets/{SLUG}/fixed.json" in report
    result = json.loads((student / "grade-01.json").read_text())
    assert result["passed"] and result["thresholds"]["flat_below"] == 10.0
    assert result["ignored"] == [f"datasets/{SLUG}/fixed.json", f"labs/{SLUG}/lab.toml"]

    lab = load_lab("01", student)
    parts = diff.sections(lab)
    added = [
        line
        for line in FIX.read_text().splitlines()
        if line.startswith("+") and not line.startswith("+++") and line[1:].strip()
    ]
    assert added[0] in parts[0][1], "the student's change leads the diff"
    assert len(parts) == 1 + len(lab.patches)

    materialise(lab, "broken", tmp_path / "student-broken")
    materialise(load_lab("01", REPO), "broken", tmp_path / "published")
    assert base.differences(tmp_path / "published", tmp_path / "student-broken") == []
