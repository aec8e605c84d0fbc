"""The learner's loop on the fake lab: `leaklab check` (and `test --variant mine`) run
the grade's own gate, `leaklab watch` re-runs it on a save, `leaklab status` reports
each lab from local results. Bad input: one line and the CLI's exit code."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import publish

from leaklab import status
from leaklab.grading.grade import grade
from leaklab.spec import load_lab

REGRESSION = """diff --git a/test_regression.py b/test_regression.py
new file mode 100644
--- /dev/null
+++ b/test_regression.py
@@ -0,0 +1 @@
+assert "HELD.append" not in open("server.py").read(), "a request body is not kept once answered"
"""


def leaklab(root: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "leaklab", *args],
        env={**os.environ, "LEAKLAB_ROOT": str(root), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def gated_repo(fake_repo: Path) -> Path:
    """The fake lab whose solution adds a regression test, which its tests run."""
    solution = fake_repo / "solutions" / "90-fake"
    (solution / "02-regression-test.patch").write_text(REGRESSION)
    answer = solution / "answer.toml"
    answer.write_text(
        answer.read_text().replace(
            'patches = ["01-forget.patch"]',
            'patches = ["01-forget.patch", "02-regression-test.patch"]\n'
            'regression_tests = ["test_regression.py"]',
        )
    )
    toml = fake_repo / "labs" / "90-fake" / "lab.toml"
    toml.write_text(
        toml.read_text().replace(
            'test = [["python3", "-c", "import server"]]',
            'test = [["python3", "-c", "import server"], ["python3", "test_regression.py"]]',
        )
    )
    publish(fake_repo, "a regression test")
    return fake_repo


def fix(root: Path) -> None:
    server = root / "labs" / "90-fake" / "service" / "server.py"
    server.write_text(server.read_text().replace("HELD.append(body)", "pass  # fixed"))


def test_check_runs_the_grades_gate_and_says_what_the_failing_test_expects(
    gated_repo: Path,
) -> None:
    failed = leaklab(gated_repo, "check", "90")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "FAIL  lab 90 at tests" in failed.stdout
    assert "AssertionError: a request body is not kept once answered" in failed.stdout
    # The same gate a grade runs: an attempt that does not fix it (an unchanged tree is
    # "not attempted" by a grade) stops at the same test, before any load.
    server = gated_repo / "labs" / "90-fake" / "service" / "server.py"
    server.write_text(server.read_text() + "\n# an attempt that changes nothing yet\n")
    graded = grade(load_lab("90", gated_repo), "mine", log=lambda _: None)
    assert (graded.passed, graded.stage) == (False, "tests")
    # `test --variant mine` is the same check.
    same = leaklab(gated_repo, "test", "90", "--variant", "mine")
    assert same.returncode == 1 and "a request body is not kept once answered" in same.stdout
    fix(gated_repo)
    passed = leaklab(gated_repo, "check", "90")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "PASS  lab 90" in passed.stdout and "leaklab grade 90" in passed.stdout


def test_a_fix_given_as_a_patch_is_tested_by_the_grades_gate(gated_repo: Path) -> None:
    """`test --variant patch:FILE` is the gate a `grade --patch FILE` runs (the course's
    tests and the solution's regression test), not only the service's own tests: a
    patch that keeps the leak fails there, by the regression test's words."""
    server = gated_repo / "labs" / "90-fake" / "service" / "server.py"
    published = server.read_text()
    server.write_text(published + "\n# a comment; the leak kept\n")
    wrong = gated_repo / "wrong.patch"
    diff = subprocess.run(
        ["git", "diff", "--relative=labs/90-fake/service"],
        cwd=gated_repo,
        capture_output=True,
        text=True,
        check=True,
    )
    wrong.write_text(diff.stdout)
    server.write_text(published)
    failed = leaklab(gated_repo, "test", "90", "--variant", f"patch:{wrong}")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "FAIL  lab 90 at tests" in failed.stdout
    assert "a request body is not kept once answered" in failed.stdout
    # A patch's result is not the learner's tree's: `leaklab status` records no check.
    record = gated_repo / ".leaklab" / "status" / "90-fake.json"
    assert not record.exists() or "check" not in json.loads(record.read_text())


def test_status_follows_the_learner_through_a_lab(gated_repo: Path) -> None:
    none = leaklab(gated_repo, "status")
    assert none.returncode == 2
    assert none.stderr.strip().splitlines() == [
        "error: no results yet: no lab changed, checked, run or graded in this clone (start "
        "with `leaklab run 01`)"
    ]
    lab = load_lab("90", gated_repo)
    assert status.lab_status(lab).state == "not started"
    assert leaklab(gated_repo, "check", "90").returncode == 1  # as published: it fails
    assert status.lab_status(lab).state == "not started"
    fix(gated_repo)
    assert status.lab_status(lab).state == "changed"
    assert leaklab(gated_repo, "check", "90").returncode == 0
    shown = leaklab(gated_repo, "status")
    assert shown.returncode == 0 and shown.stdout.split()[:2] == ["90-fake", "checked"]
    runs = gated_repo / ".leaklab" / "runs" / "90-fake"
    runs.mkdir(parents=True)
    (runs / "mine.json").write_text("{}")
    assert status.lab_status(lab).state == "measured"
    status.record(lab, "grade", True)
    assert status.lab_status(lab).state == "passed"
    server = gated_repo / "labs" / "90-fake" / "service" / "server.py"
    time.sleep(0.01)
    server.write_text(server.read_text() + "\n# an edit after the grade\n")
    assert status.lab_status(lab).state == "changed"  # the grade was of another tree


@pytest.mark.timeout(240)  # a watch that never re-runs must fail, not hang the suite
def test_watch_checks_again_after_a_save_and_stops_on_ctrl_c(gated_repo: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "leaklab", "watch", "90"],
        env={
            **os.environ,
            "LEAKLAB_ROOT": str(gated_repo),
            "COLUMNS": "200",
            "PYTHONUNBUFFERED": "1",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    seen: list[str] = []

    def until(text: str) -> None:
        deadline = time.monotonic() + 120
        for line in proc.stdout or []:
            seen.append(line)
            if text in line or time.monotonic() > deadline:
                return

    try:
        until("watching labs/90-fake/service")
        assert any("FAIL  lab 90" in line for line in seen), "".join(seen)
        fix(gated_repo)
        until("watching labs/90-fake/service")
        text = "".join(seen)
        assert "service/server.py changed" in text and "PASS  lab 90" in text, text
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, "".join(seen) + rest
    assert "stopped watching lab 90" in rest and "Traceback" not in rest


def test_watch_without_the_labs_toolchain_is_one_line_and_exit_2(fake_repo: Path) -> None:
    toml = fake_repo / "labs" / "90-fake" / "lab.toml"
    toml.write_text(
        toml.read_text().replace(
            'python = ["python3", "--version"]',
            'python = ["python3", "--version"]\nnotyet = ["leaklab-no-such-tool", "--version"]',
        )
    )
    done = leaklab(fake_repo, "watch", "90", timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: lab 90 needs leaklab-no-such-tool, not installed here: run scripts/setup "
        "--lab 90, then leaklab watch 90"
    ]
