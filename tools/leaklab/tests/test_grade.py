"""`leaklab grade` and `leaklab diff` on the fake lab: every gate can fail, none crashes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import git, publish
from test_base import add_regression_test

from leaklab import base, dataset, report
from leaklab.build import build_variant, run_tests, variant_key
from leaklab.dataset import Dataset
from leaklab.errors import LeakLabError
from leaklab.grading import diff
from leaklab.grading import grade as grade_module
from leaklab.grading import result as result_format
from leaklab.grading.grade import evaluate, grade, ignored_changes, measure, published_lab
from leaklab.runner import RunOptions, run
from leaklab.spec import GradeCheck, load_lab

FAKELAB = Path(__file__).parent / "fakelab"
SLOW_FIX = (FAKELAB / "slow-fix.patch").read_text()
CRASH_AT_START = (FAKELAB / "crash-at-start.patch").read_text()

GRADE_TABLE = """
[grade]
rss_grows_above = 50

[[grade.checks]]
name = "answers as many requests as the solution"
measure = "load.ok"
at_least = 0.9
of = "solution"

[[grade.checks]]
name = "answers what it was sent"
measure = "load.ok"
at_least = 0.95
of = "load.sent"
"""


def quiet(_: str) -> None:
    pass


@pytest.fixture
def graded_repo(no_orphans: Path) -> Path:
    """The fake lab with a [grade] table and a captured solution run, all committed."""
    toml = no_orphans / "labs" / "90-fake" / "lab.toml"
    toml.write_text(toml.read_text() + GRADE_TABLE)
    answer = no_orphans / "solutions" / "90-fake" / "answer.toml"
    answer.write_text(answer.read_text() + '\n[grade]\nhint = "look at what the handler keeps"\n')
    lab = load_lab("90", no_orphans)
    run(lab, RunOptions("fixed", dest=no_orphans / "datasets" / "90-fake"), log=quiet)
    publish(no_orphans, "grade table and solution run")
    return no_orphans


def write_patch(root: Path, text: str) -> str:
    path = root / "submission.patch"
    path.write_text(text)
    return f"patch:{path}"


def test_broken_fails_on_the_verdict(graded_repo: Path) -> None:
    result = grade(load_lab("90", graded_repo), "broken", log=quiet)
    assert not result.passed
    assert (result.stage, result.verdict) == ("verdict", "grows")
    assert result.hint and result.slope is not None and result.slope["low"] > 1.0


def test_the_solution_passes_with_its_figures(graded_repo: Path) -> None:
    result = grade(load_lab("90", graded_repo), "fixed", log=quiet)
    assert result.passed, result.reason
    assert result.verdict == "flat" and all(c.passed for c in result.checks)
    assert set(result.reference) == {"fixed"}  # no captured broken run in this repo
    assert result.reference["fixed"]["load.ok"] is not None
    # measured as the verdict needs, no more: no idle phase, no snapshots
    assert result.dataset is not None
    graded = Path(result.dataset).with_suffix("")
    assert not (graded / "stats.json").exists()
    assert json.loads(graded.with_suffix(".json").read_text())["phases"]["idle_s"] == 0


def test_a_fix_that_slows_the_load_fails_a_check(graded_repo: Path) -> None:
    result = grade(load_lab("90", graded_repo), write_patch(graded_repo, SLOW_FIX), log=quiet)
    assert not result.passed
    assert result.verdict == "flat"  # the symptom is gone...
    assert result.stage == "checks"  # ...but the service no longer does its job
    assert not result.checks[0].passed and "load.ok" in result.checks[0].detail


def test_a_grade_measures_the_tree_it_tested_and_builds_it_once(graded_repo: Path) -> None:
    """The run starts the tree the gate built and tested (the learner's, with the
    course's tests and the solution's regression test in it), not a second build of the
    learner's tree without them."""
    add_regression_test(graded_repo)
    publish(graded_repo, "a regression test")
    server = graded_repo / "labs" / "90-fake" / "service" / "server.py"
    server.write_text(server.read_text().replace("HELD.append(body)", "pass  # fixed"))
    lines: list[str] = []
    result = grade(load_lab("90", graded_repo), "mine", log=lines.append)
    assert result.passed, result.reason
    builds = [line for line in lines if ": building " in line and " load: " not in line]
    assert len(builds) == 1, lines


def test_changes_outside_the_service_are_ignored_committed_or_not(graded_repo: Path) -> None:
    """A learner who commits a lighter load and a looser verdict rule, and edits the
    reference run, is still graded on the published ones: broken still fails."""
    lab_dir = graded_repo / "labs" / "90-fake"
    load = lab_dir / "load" / "load.py"
    load.write_text(load.read_text().replace('x" * 100_000', 'x" * 10'))
    toml = lab_dir / "lab.toml"
    toml.write_text(toml.read_text().replace("flat_below = 1.0", "flat_below = 1000.0"))
    git(graded_repo, "commit", "-qam", "a lighter load and a looser rule")
    reference = graded_repo / "datasets" / "90-fake" / "fixed.json"
    reference.write_text(reference.read_text().replace('"ok"', '"ok_"'))  # uncommitted
    ignored = [
        "datasets/90-fake/fixed.json",
        "labs/90-fake/lab.toml",
        "labs/90-fake/load/load.py",
    ]
    # The service itself is untouched: "mine" is not attempted, and says what it ignored.
    mine = grade(load_lab("90", graded_repo), "mine", log=quiet)
    assert (mine.status, mine.ignored) == ("not_attempted", ignored)
    # Graded, the same tree meets the published load and rule: it still fails.
    result = grade(load_lab("90", graded_repo), "broken", log=quiet)
    assert result.ignored == ignored
    assert (result.passed, result.stage, result.verdict) == (False, "verdict", "grows")
    assert result.thresholds["flat_below"] == 1.0


def test_a_patch_to_a_fixture_is_listed_as_ignored(fake_repo: Path) -> None:
    """A fixture is restored from the published lab when the tree is made, so the
    learner is told that their change to it does not count."""
    toml = fake_repo / "labs" / "90-fake" / "lab.toml"
    toml.write_text(
        toml.read_text().replace(
            'story = "test fixture"', 'story = "test fixture"\nfixtures = ["service/server.py"]'
        )
    )
    publish(fake_repo, "server.py measures: a fixture")
    patch = fake_repo / "solutions" / "90-fake" / "01-forget.patch"
    lab = published_lab(load_lab("90", fake_repo))
    assert ignored_changes(lab, f"patch:{patch}") == ["labs/90-fake/service/server.py"]


def test_a_metric_that_hides_the_leak_fails_the_rss_cross_check(graded_repo: Path) -> None:
    """The verdict series comes from the service; the harness measures RSS itself. A
    fix that keeps the leak but stops counting it reads flat, and is caught."""
    server = graded_repo / "labs" / "90-fake" / "service" / "server.py"
    text = server.read_text().replace("HELD.append(body)", "HIDDEN.append(body)")
    server.write_text(text.replace("HELD: list[bytes] = []", "HELD: list[bytes] = []\nHIDDEN = []"))
    result = grade(load_lab("90", graded_repo), "mine", log=quiet)
    assert (result.passed, result.verdict, result.stage) == (False, "flat", "cross-check")
    assert "RSS" in result.reason and "disagree" in result.reason


def with_a_course_test(graded_repo: Path) -> Path:
    """The fake lab with a published test file (`course_tests`), as a real lab has."""
    service = graded_repo / "labs" / "90-fake" / "service"
    (service / "test_server.py").write_text("import server\nassert isinstance(server.HELD, list)\n")
    toml = graded_repo / "labs" / "90-fake" / "lab.toml"
    toml.write_text(
        toml.read_text()
        .replace(
            'test = [["python3", "-c", "import server"]]', 'test = [["python3", "test_server.py"]]'
        )
        .replace(
            'story = "test fixture"', 'story = "test fixture"\ncourse_tests = ["service/test_*.py"]'
        )
    )
    publish(graded_repo, "a course test")
    return service


def test_weakened_tests_cannot_pass_the_test_gate(graded_repo: Path) -> None:
    """The grade runs the course's tests as published, not the learner's."""
    service = with_a_course_test(graded_repo)
    server = service / "server.py"
    server.write_text(
        server.read_text()
        .replace("HELD: list[bytes] = []", "")
        .replace("HELD.append(body)", "pass")
    )
    (service / "test_server.py").write_text("# weakened: nothing to check\n")
    result = grade(load_lab("90", graded_repo), "mine", log=quiet)
    assert (result.passed, result.stage) == (False, "tests"), result.reason
    assert "course's unit tests fail" in result.reason and "\x1b[" not in result.reason


def test_the_learners_own_tests_are_run_and_reported_not_graded(graded_repo: Path) -> None:
    """A valid fix passes on the course's tests; the learner's own, changed tests run
    too and their failure is reported beside the grade, not as the grade."""
    service = with_a_course_test(graded_repo)
    server = service / "server.py"
    server.write_text(server.read_text().replace("HELD.append(body)", "pass  # fixed"))
    (service / "test_server.py").write_text("raise SystemExit('my own test is not done')\n")
    result = grade(load_lab("90", graded_repo), "mine", log=quiet)
    assert result.passed, result.reason
    assert result.own_tests is not None and result.own_tests.startswith("failed")


def test_a_reference_of_zero_is_unusable_not_a_pass() -> None:
    def run(ok: int) -> Dataset:
        frame = pd.DataFrame({"t_s": [0.0], "series": ["x"], "value": [1.0]})
        return Dataset("r", frame, {"load_result": {"ok": ok, "sent": 10}})

    check = GradeCheck("answers", "load.ok", "at_least", 0.9, "solution")
    result = evaluate(check, run(0), run(0))
    assert not result.passed and "unusable" in result.detail
    assert evaluate(check, run(10), run(10)).passed


def test_a_run_stopped_early_is_compared_per_second_of_load() -> None:
    """An adaptive grade may stop at 30 s; the solution was captured over 60 s."""

    def run(ok: int, load_s: float) -> Dataset:
        frame = pd.DataFrame({"t_s": [0.0], "series": ["x"], "value": [1.0]})
        return Dataset("r", frame, {"load_result": {"ok": ok}, "phases": {"load_s": load_s}})

    check = GradeCheck("answers", "load.ok", "at_least", 0.9, "solution")
    assert evaluate(check, run(450, 30), run(900, 60)).passed
    assert not evaluate(check, run(300, 30), run(900, 60)).passed  # two thirds of the rate


def test_a_tree_that_breaks_the_unit_tests_fails(graded_repo: Path) -> None:
    server = graded_repo / "labs" / "90-fake" / "service" / "server.py"
    server.write_text(server.read_text() + "\nthis is not python\n")
    result = grade(load_lab("90", graded_repo), "mine", log=quiet)
    assert (result.passed, result.stage) == (False, "tests")
    assert "unit tests fail" in result.reason
    assert result.hint and "leaklab test 90" in result.hint  # advice for this gate
    # Tests that fail are what was asked failing: exit 1. A lab that does not exist is
    # a usage error: exit 2 (ecosystem review, minor item 8).
    env = {**os.environ, "LEAKLAB_ROOT": str(graded_repo)}
    cli = [sys.executable, "-m", "leaklab", "test"]
    failed = subprocess.run([*cli, "90", "--variant", "mine"], env=env, capture_output=True)
    assert failed.returncode == 1, failed.stderr
    typo = subprocess.run([*cli, "42"], env=env, capture_output=True)
    assert typo.returncode == 2, typo.stderr


def test_a_patch_that_does_not_apply_fails_at_build(graded_repo: Path) -> None:
    variant = write_patch(graded_repo, SLOW_FIX.replace("HELD.append(body)", "nothing here"))
    result = grade(load_lab("90", graded_repo), variant, log=quiet)
    assert (result.passed, result.stage) == (False, "build")
    assert "does not apply" in result.reason


def test_a_service_that_dies_at_start_fails_at_run(graded_repo: Path) -> None:
    variant = write_patch(graded_repo, CRASH_AT_START)
    result = grade(load_lab("90", graded_repo), variant, log=quiet)
    assert (result.passed, result.stage) == (False, "run")
    assert "exited with code 3" in result.reason


def test_cli_exit_codes_and_json(graded_repo: Path, tmp_path: Path) -> None:
    env = {**os.environ, "LEAKLAB_ROOT": str(graded_repo), "CI": "1"}
    cmd = [sys.executable, "-m", "leaklab", "grade", "90"]
    passed = subprocess.run(
        [*cmd, "--variant", "fixed", "--json", str(tmp_path / "ok.json")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "PASS" in passed.stdout and "hint:" not in passed.stdout
    body = json.loads((tmp_path / "ok.json").read_text())
    assert body["passed"] is True and body["lab"] == "90-fake" and body["versions"]
    assert result_format.problems(body) == []
    assert (body["status"], body["score"], body["max_score"], body["hint"]) == (
        "passed",
        10,
        10,
        None,
    )
    assert body["learner"]["commit"] == base.git(graded_repo, "rev-parse", "HEAD")
    assert body["grader"]["published"] is None  # no --course: nothing to compare with
    failed = subprocess.run(
        [*cmd, "--variant", "broken", "--json", "-", "--junit", str(tmp_path / "j.xml")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    # --json -: the result alone on stdout, the report on stderr.
    assert failed.returncode == 1 and "FAIL" in failed.stderr and "hint:" in failed.stderr
    doc = json.loads(failed.stdout)
    assert result_format.problems(doc) == [] and doc["status"] == "failed"
    assert doc["stage"] == "verdict" and doc["hint"] and doc["score"] == 0
    junit = (tmp_path / "j.xml").read_text()
    assert '<testcase classname="leaklab.90-fake" name="verdict">' in junit
    assert 'failures="1"' in junit
    missing = subprocess.run(
        [*cmd, "--patch", str(tmp_path / "nope.patch")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 2 and "does not exist" in " ".join(missing.stderr.split())


def run_with(values: list[float], load_s: float = 10.0) -> Dataset:
    """A one-series run sampled once a second, the load ending at `load_s`."""
    frame = pd.DataFrame({"t_s": range(len(values)), "series": "proc_bytes", "value": values})
    return Dataset("run", frame, {"phases": {"load_s": load_s}, "load_result": {"ok": 90}})


def test_median_measures_the_steady_window_and_at_most_bounds_it() -> None:
    # A warm-up spike and a post-load spike are outside the window the median reads.
    mine = run_with([900.0, 900.0, 10, 12, 11, 13, 12, 11, 10, 12, 11, 900.0, 900.0])
    solution = run_with([5.0] * 13)
    assert measure(mine, "median.proc_bytes", warmup_s=2) == 11.0
    assert measure(mine, "peak.proc_bytes") == 900.0
    small = GradeCheck("stays small", "median.proc_bytes", "at_most", 4, "solution")
    assert evaluate(small, mine, solution, warmup_s=2).passed  # 11 <= 20
    tight = GradeCheck("stays small", "median.proc_bytes", "at_most", 2, "solution")
    result = evaluate(tight, mine, solution, warmup_s=2)
    assert not result.passed and result.limit == 10.0 and "<= 2 x" in result.detail
    works = GradeCheck("answers", "load.ok", "at_least", 0.9, "solution")
    assert evaluate(works, mine, run_with([5.0] * 13)).passed


def test_unit_tests_run_once_per_tree_and_a_failure_is_never_reused(fake_repo: Path) -> None:
    lab = load_lab("90", fake_repo)
    built = build_variant(lab, "fixed", log=quiet)
    log = fake_repo / "test.log"
    assert run_tests(lab, built, log)  # ran
    assert not run_tests(lab, built, log, reuse_pass=True)  # same bytes: the pass holds
    assert "already passed" in log.read_text()
    assert run_tests(lab, built, log)  # asked outright (leaklab test): runs again

    server = fake_repo / "labs" / "90-fake" / "service" / "server.py"
    server.write_text(server.read_text() + "\nthis is not python\n")
    broken = build_variant(lab, "mine", log=quiet)
    assert broken.key != built.key
    for _ in range(2):  # fails both times: nothing was recorded
        with pytest.raises(LeakLabError, match="failed"):
            run_tests(lab, broken, log, reuse_pass=True)


def test_diff_shows_the_learner_change_beside_the_solution(fake_repo: Path) -> None:
    server = fake_repo / "labs" / "90-fake" / "service" / "server.py"
    server.write_text(server.read_text().replace("HELD.append(body)", "HELD.clear()"))
    (server.parent / "notes.txt").write_text("a new file\n")
    lab = load_lab("90", fake_repo)
    parts = diff.sections(lab)
    assert [title.split(":")[0] for title, _ in parts] == ["mine", "solution stage 1"]
    mine = parts[0][1]
    assert "-        HELD.append(body)" in mine and "+        HELD.clear()" in mine
    assert "b/notes.txt" in mine and "a/broken" not in mine
    page = diff.to_html(lab, parts)
    assert page.startswith("<!doctype html>") and "HELD.clear()" in page


def test_unit_tests_that_hang_fail_and_leave_nothing_running(
    graded_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grade_module, "TEST_TIMEOUT_S", 2.0)
    server = graded_repo / "labs" / "90-fake" / "service" / "server.py"
    server.write_text("import time\ntime.sleep(600)  # a deadlock at import\n" + server.read_text())
    result = grade(load_lab("90", graded_repo), "mine", log=quiet)
    assert (result.passed, result.stage) == (False, "tests")
    assert "did not finish within 2 s" in result.reason
    # no_orphans (under graded_repo) asserts the sleeping test process was stopped


def test_an_untouched_lab_is_not_attempted_at_once(graded_repo: Path) -> None:
    """A learner's tree equal to the published service: decided without a build."""
    started = time.monotonic()
    result = grade(load_lab("90", graded_repo), "mine", log=quiet)
    assert (result.status, result.stage, result.passed) == ("not_attempted", "scope", False)
    assert result.hint is None and time.monotonic() - started < 5
    assert result.dataset is None and not (graded_repo / ".leaklab" / "grades").exists()


def test_a_recorded_grade_is_judged_again_as_it_was_graded(graded_repo: Path) -> None:
    """`rejudge` on the dataset a grade wrote reaches the grade's verdict, stage and
    checks, and `variant_key` names the build that grade measured: CI holds a case
    measured once to today's checks this way, on the tree it still makes."""
    lab = load_lab("90", graded_repo)
    variant = write_patch(graded_repo, SLOW_FIX)
    graded = grade(lab, variant, log=quiet)
    assert graded.dataset is not None
    recorded = dataset.read(Path(graded.dataset).with_suffix(".json"))
    again = grade_module.rejudge(lab, recorded)
    assert (again.passed, again.stage, again.verdict) == (False, "checks", "flat")
    assert [c.passed for c in again.checks] == [c.passed for c in graded.checks]
    assert again.reason == graded.reason
    assert recorded.meta["build_key"] == variant_key(lab, variant, course_tests=True)
    assert recorded.meta["load_params"] == grade_module.load_params(lab)
    assert recorded.meta["build_key"] != variant_key(lab, "fixed", course_tests=True)


def test_every_grade_keeps_its_dataset(graded_repo: Path) -> None:
    """graded.csv used to be overwritten by each grade; each grade now has its own."""
    lab = load_lab("90", graded_repo)
    first = grade(lab, "fixed", log=quiet)
    time.sleep(1.1)  # the dataset's name has the second it started
    second = grade(lab, "fixed", log=quiet)
    assert first.dataset and second.dataset and first.dataset != second.dataset
    assert Path(first.dataset).is_file() and Path(second.dataset).is_file()


def test_a_failed_check_gets_advice_about_that_check(graded_repo: Path) -> None:
    result = grade(load_lab("90", graded_repo), "fixed", log=quiet)
    result.passed, result.stage = False, "checks"
    result.checks[0].passed = False
    lab = load_lab("90", graded_repo)
    advice = grade_module.hint_for(lab, result)
    assert advice and result.checks[0].name in advice and advice != lab.grade.hint
    result.stage = "verdict"
    assert grade_module.hint_for(lab, result) == lab.grade.hint


def test_a_failed_patch_is_pointed_at_the_test_of_that_patch(graded_repo: Path) -> None:
    """After `grade --patch FILE` fails at the tests, the advice tests that patch, not the
    learner's tree (which may hold something else)."""
    lab = load_lab("90", graded_repo)
    result = grade_module.GradeResult(lab.slug, "patch:/tmp/fix.patch", stage="tests")
    assert "--variant patch:/tmp/fix.patch" in (grade_module.hint_for(lab, result) or "")
    result.variant = "mine"
    assert "--variant mine" in (grade_module.hint_for(lab, result) or "")


def test_a_grade_on_a_busy_machine_says_so_as_a_run_does(
    graded_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The learner reads the grade, not the run: the busy-machine warning `leaklab run`
    prints (its detection is tested in test_report.py) is in the grade's output too."""
    warning = "warning: the machine was too busy for these figures to be trusted (test)"
    monkeypatch.setattr(report, "machine_busy", lambda lab, ds: warning)
    said: list[str] = []
    grade(load_lab("90", graded_repo), "fixed", log=said.append)
    assert warning in said
