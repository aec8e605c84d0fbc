"""The Classroom 50 adapter, run as Classroom 50's runner runs an assignment's
`autograder.py`: with the runner's Python, in the student's checkout, the assignment's
variables in its environment, the bundle beside it; then its `result.json` checked
against the contract the runner and the score collector enforce ("Advanced
Autograding", classroom50/result/v1), written here from the wiki's description."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from test_student import FIX, SLUG, WRONG, template_copy

REPO = Path(__file__).resolve().parents[3]
AUTOGRADER = REPO / "docs" / "grading" / "classroom50" / "autograder.py"


def check_contract(result: dict[str, Any]) -> None:
    """What a v1 result must hold for the runner to publish it and the collector to count it."""
    assert result["schema"] == "classroom50/result/v1"
    for key in ("classroom", "assignment", "owner", "commit", "release", "review", "datetime"):
        assert isinstance(result[key], str) and result[key], key
    assert result["submission"].startswith("submit/")
    assert result["assignment_type"] in ("individual", "group", "team")
    for scored in (result, *result["tests"]):
        score, most = scored["score"], scored["max-score"]
        assert type(score) is int and type(most) is int and 0 <= score <= most
    for test in result["tests"]:
        assert isinstance(test["test-name"], str) and test["test-name"]
        assert isinstance(test["passed"], bool)


def runner_env(bundle: Path, output: Path) -> dict[str, str]:
    """The variables the runner's workflow sets and the runner adds for the entrypoint."""
    return {
        **os.environ,
        "CLASSROOM": "leak-lab-2026",
        "ASSIGNMENT": "lab-01",
        "SUBMISSION_TAG": "submit/20261127T010000Z-abc1234",
        "GITHUB_REPOSITORY": "leak-lab-2026/leak-lab-2026-lab-01-ada",
        "GITHUB_OUTPUT": str(output),
        "CLASSROOM50_BUNDLE_DIR": str(bundle),
        "USERNAME": "ada",
        "OWNER": "ada",
        "ASSIGNMENT_TYPE": "individual",
        "COMMIT_URL": "https://github.com/leak-lab-2026/x/commit/abc1234",
        "RELEASE_URL": "https://github.com/leak-lab-2026/x/releases/tag/submit%2F1",
        "REVIEW_URL": "https://github.com/leak-lab-2026/x/compare/a...b",
    }


def bundle(tmp_path: Path) -> Path:
    """The instructor's bundle: the adapter and its settings (here without a course tag:
    the copy's first commit is the course)."""
    folder = tmp_path / "bundle" / "lab-01"
    folder.mkdir(parents=True)
    shutil.copy(AUTOGRADER, folder / "autograder.py")
    (folder / "leaklab.toml").write_text('lab = "01"\n')
    return folder


def run_autograder(student: Path, folder: Path, output: Path) -> dict[str, Any]:
    for stale in ("result.json", "release-body.md"):
        (student / stale).unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, str(folder / "autograder.py")],
        cwd=student,
        env=runner_env(folder, output),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=1500,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result: dict[str, Any] = json.loads((student / "result.json").read_text())
    check_contract(result)
    return result


@pytest.mark.leak
def test_the_adapter_grades_a_wrong_and_a_valid_fix(tmp_path: Path) -> None:
    student = template_copy(tmp_path / "student")
    folder = bundle(tmp_path)
    output = tmp_path / "github_output"
    git(student, "apply", f"--directory=labs/{SLUG}/service", str(WRONG))
    git(student, "commit", "-qam", "a wrong fix")
    wrong = run_autograder(student, folder, output)
    assert (wrong["score"], wrong["max-score"]) == (0, 10)
    assert wrong["tests"][0]["passed"] is False and "tests" in wrong["tests"][0]["test-name"]
    assert "status=error" not in output.read_text() if output.exists() else True

    git(student, "checkout", "-q", "HEAD~1", "--", f"labs/{SLUG}/service")
    git(student, "apply", f"--directory=labs/{SLUG}/service", str(FIX))
    git(student, "commit", "-qam", "a valid fix")
    valid = run_autograder(student, folder, output)
    assert (valid["score"], valid["tests"][0]["passed"]) == (10, True)
    course = json.loads((student / "classroom50-release-assets" / "leaklab-01.json").read_text())
    assert course["status"] == "passed" and course["grader"]["published"] is True
    assert "Leak Lab, lab 01: 10/10" in (student / "release-body.md").read_text()


def test_a_repository_without_history_gets_a_result_that_says_why(tmp_path: Path) -> None:
    """Bad input: no commit to take as the course's. One line, a zero-point result the
    runner can still publish, and the runner's status set to error."""
    student = tmp_path / "student"
    (student / "labs").mkdir(parents=True)
    git(student, "init", "-q")
    output = tmp_path / "github_output"
    result = run_autograder(student, bundle(tmp_path), output)
    assert result["score"] == 0 and result["tests"][0]["passed"] is False
    assert "status=error" in output.read_text()
    assert "history" in (student / "release-body.md").read_text()
