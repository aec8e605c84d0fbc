"""A simulated student, end to end: a repository made from the course template (one
squashed commit), a valid fix of lab 01 committed, edits to what the grade measures
with committed too, and the grading workflow's own steps for lab 01, run as Actions
would; and a student's edit to the grader itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import git

from leaklab import base
from leaklab.spec import lab_slugs

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


WORKFLOW = REPO / ".github" / "workflows" / "grade.yml"
WRONG = Path(__file__).parent / "grading" / SLUG / "fail" / "answer-without-storing.patch"


def actions_env(home: Path, **extra: str) -> dict[str, str]:
    """What a workflow step sees, and nothing of this machine's shell: PATH and HOME
    (the runner's toolchains and caches), the step's own variables. FORCE_COLOR as the
    old grader action set it, to show that it no longer draws a bar into the log."""
    # This machine's network settings (its CA bundle, a proxy, a Go proxy) stand in for
    # what a runner's image has built in; nothing else of this shell is passed.
    network = {
        k: v
        for k, v in os.environ.items()
        if k.startswith(("SSL_", "PIP_", "UV_", "GOPROXY", "GONOSUMDB", "GOFLAGS"))
        or "CA_BUNDLE" in k
        or "CA_CERTS" in k
        or k.lower() in ("http_proxy", "https_proxy", "no_proxy")
    }
    return {
        **network,
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "FORCE_COLOR": "true",
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        **extra,
    }


def step(job: dict[str, Any], name: str) -> str:
    script = next(s["run"] for s in job["steps"] if s.get("name") == name)
    assert isinstance(script, str)
    return script


def run_step(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A `run:` step as the runner runs it: bash -e, no TTY, no stdin."""
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )


def outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


@pytest.mark.leak
def test_the_workflow_grades_only_the_changed_lab_as_actions_would(tmp_path: Path) -> None:
    """grade.yml's own commands on a template copy with lab 01 fixed: the `changed` job
    names lab 01 alone (the others not attempted, in its summary), and lab 01's job sets
    up, grades with the published grader and writes its row into the job summary."""
    student = template_copy(tmp_path / "student")
    git(student, "apply", f"--directory=labs/{SLUG}/service", str(FIX))
    git(student, "commit", "-qam", "fix the abort path")
    # What the grade measures with, edited and committed: a looser verdict rule and a
    # reference run that asks for less. The grade must ignore both, and say so.
    toml = student / "labs" / SLUG / "lab.toml"
    assert "flat_below = 10.0" in toml.read_text()
    toml.write_text(toml.read_text().replace("flat_below = 10.0", "flat_below = 500.0"))
    reference = student / "datasets" / SLUG / "fixed.json"
    reference.write_text(reference.read_text().replace('"ok": ', '"ok": 1, "was_ok": '))
    git(student, "commit", "-qam", "make it easier")
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    home = Path(os.environ["HOME"])

    changed_out, changed_summary = tmp_path / "changed.out", tmp_path / "changed.md"
    env = actions_env(
        home, GITHUB_OUTPUT=str(changed_out), GITHUB_STEP_SUMMARY=str(changed_summary)
    )
    found = run_step(
        step(jobs["changed"], "the labs whose service differs from the published commit"),
        student,
        env,
    )
    assert found.returncode == 0, found.stderr
    got = outputs(changed_out)
    assert json.loads(got["labs"]) == ["01"]
    assert got["course"] == base.git(student, "rev-list", "--max-parents=0", "HEAD")
    summary = changed_summary.read_text()
    others = [s for s in lab_slugs(student) if s != SLUG]
    assert all(f"| {s} | not attempted" in summary for s in others), summary

    grade_summary = tmp_path / "grade.md"
    env = actions_env(
        home,
        LAB="01",
        COURSE=got["course"],
        NO_COLOR=jobs["grade"]["env"]["NO_COLOR"],
        GITHUB_STEP_SUMMARY=str(grade_summary),
    )
    started = time.monotonic()
    log = []
    for name in ("the course's machinery, not the learner's", "set up the lab", "grade"):
        ran = run_step(step(jobs["grade"], name), student, env)
        log.append(ran.stdout + ran.stderr)
        assert ran.returncode == 0, f"{name}:\n" + "".join(log)[-3000:]
    ran = run_step(step(jobs["grade"], "job summary"), student, env)
    assert ran.returncode == 0, ran.stderr
    print(f"set-up and grade of lab 01: {time.monotonic() - started:.0f} s")

    assert sorted(p.name for p in student.glob("grade-*")) == [
        "grade-01.json",
        "grade-01.png",
        "grade-01.xml",
    ]
    result = json.loads((student / "grade-01.json").read_text())
    assert result["status"] == "passed" and result["grader"]["published"] is True
    assert result["thresholds"]["flat_below"] == 10.0
    assert result["ignored"] == [f"datasets/{SLUG}/fixed.json", f"labs/{SLUG}/lab.toml"]
    assert f"| {SLUG} | ✅ passed | 10/10 |" in grade_summary.read_text()
    # No TTY, FORCE_COLOR set: progress lines, never a redrawn bar.
    assert "\r" not in "".join(log)


def test_a_grader_edited_by_the_student_does_not_grade_them(tmp_path: Path) -> None:
    """Issue 32, item 6: a one-line edit to the grader, committed, makes the student's
    own harness pass a wrong fix; given the course's commit, the grade runs the
    published grader instead, fails the fix, and lists the edit as ignored."""
    student = template_copy(tmp_path / "student")
    git(student, "apply", f"--directory=labs/{SLUG}/service", str(WRONG))
    grader = student / "tools" / "leaklab" / "src" / "leaklab" / "grading" / "grade.py"
    text = grader.read_text()
    one_line = "    result.passed, result.stage, result.reason = False, stage, reason"
    assert one_line in text
    grader.write_text(text.replace(one_line, one_line.replace("False", "True")))
    git(student, "commit", "-qam", "a fix, and a kinder grader")
    env = {
        **os.environ,
        "LEAKLAB_ROOT": str(student),
        "PYTHONPATH": str(student / "tools" / "leaklab" / "src"),
    }
    env.pop("LEAKLAB_COURSE_REF", None)
    command = [sys.executable, "-m", "leaklab", "grade", "01", "--json"]

    kind = subprocess.run(
        [*command, str(tmp_path / "kind.json")],
        cwd=student,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert kind.returncode == 0, kind.stdout + kind.stderr  # the edit works on its own
    strict = subprocess.run(
        [*command, str(tmp_path / "strict.json"), "--course", "root"],
        cwd=student,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "not the course's: grading with the published one" in strict.stderr
    result = json.loads((tmp_path / "strict.json").read_text())
    assert (result["status"], result["stage"]) == ("failed", "tests")
    assert result["grader"]["published"] is True
    assert result["grader"]["published_commit"] == base.git(
        student, "rev-list", "--max-parents=0", "HEAD"
    )
    assert "tools/leaklab/src/leaklab/grading/grade.py" in result["ignored"]
    assert result["failed_tests"], "the assertion that failed, not a log tail"
