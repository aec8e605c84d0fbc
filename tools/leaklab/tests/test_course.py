"""The course checks itself: every lab's patches apply, every stage builds and passes its
unit tests, every notebook runs on the committed datasets, and (marked `leak`) broken
grows while fixed does not, measured under the lab's standard load."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_student import FIX as STUDENT_FIX

from leaklab import dataset, dev, report
from leaklab.analysis import Fit
from leaklab.build import build_tree, build_variant, run_tests, variant_key
from leaklab.errors import LeakLabError
from leaklab.grading import diff
from leaklab.grading.grade import (
    READY,
    GradeResult,
    gate,
    grade,
    load_params,
    published_lab,
    rejudge,
)
from leaklab.notebooks import execute
from leaklab.spec import lab_slugs, load_lab
from leaklab.variants import PATCH_PREFIX, materialise

LABS = lab_slugs()
VARIANTS = [(slug, v) for slug in LABS for v in load_lab(slug).variants]
GRADING = Path(__file__).parent / "grading"


# A grading case's stages: the gate decides the first (scope, build, the course's unit
# tests), the measured grade the others.
GATE_STAGES = ("scope", "build", "tests")
LOAD_STAGES = ("verdict", "cross-check", "checks")


@dataclass(frozen=True)
class Case:
    """One grading case: a patch and its sidecar (`NAME.toml` beside `NAME.patch`).

    `family` says in one line what the fix does; a case expected to fail declares the
    `stage` it fails at and a `reason`, a regex its grade's reason must match (the
    failing test's name, the check's name); a case in `measured-once/` is not run in CI
    (for time) and records the result it was measured with (`measured`)."""

    slug: str
    patch: Path
    folder: str  # pass | fail | measured-once
    family: str
    stage: str | None
    reason: str | None
    measured: str | None

    @property
    def variant(self) -> str:
        return f"patch:{self.patch}"

    @property
    def should_pass(self) -> bool:
        return self.stage is None

    @property
    def at_the_gate(self) -> bool:
        return self.stage in GATE_STAGES

    @property
    def id(self) -> str:
        return f"{self.slug}-{self.patch.stem}"

    @property
    def recording(self) -> Path:
        """The dataset of the grade a `measured-once/` case was measured with, copied
        unchanged from `.leaklab/grades/` (JSON, and its CSV beside it), when it has one."""
        return self.patch.with_suffix(".graded.json")


def read_case(slug: str, patch: Path) -> Case:
    sidecar = patch.with_suffix(".toml")
    meta = tomllib.loads(sidecar.read_text()) if sidecar.is_file() else {}
    return Case(
        slug,
        patch,
        patch.parent.name,
        meta.get("family", ""),
        meta.get("stage"),
        meta.get("reason"),
        meta.get("measured"),
    )


def all_cases(folders: tuple[str, ...] = ("pass", "fail", "measured-once")) -> list[Case]:
    """Every lab's grading cases: alternative fixes (grading/<lab>/pass) that must pass,
    symptom-hiding ones (fail) that must fail where they declare, and the ones measured
    once, out of CI (measured-once). Broken and fixed are graded by the leak test."""
    return [
        read_case(slug, patch)
        for slug in LABS
        for folder in folders
        for patch in sorted((GRADING / slug / folder).glob("*.patch"))
    ]


GRADING_CASES = all_cases(("pass", "fail"))
# Cases measured once, out of CI for time, whose recorded run CI judges again.
RECORDED_CASES = [c for c in all_cases(("measured-once",)) if c.recording.is_file()]
# The student's end-to-end test grades one passing case of lab 01 through the classroom
# workflow's command (test_student.py): that is the case's measured grade, so it is not
# measured a second time here (45 s of CI).
MEASURED_CASES = [c for c in GRADING_CASES if not c.at_the_gate and c.patch != STUDENT_FIX]


def load_stage_checks(slug: str) -> list[tuple[str, str]]:
    """(stage, name) of every check a lab's measured grade applies: the verdict, the
    RSS cross-check when the lab sets one, and each `[[grade.checks]]`."""
    spec = load_lab(slug).grade
    found = [("verdict", "verdict")]
    if spec.rss_grows_above is not None:
        found.append(("cross-check", "cross-check"))
    return found + [("checks", c.name) for c in spec.checks]


def test_the_course_agrees_with_itself() -> None:
    """`leaklab dev check`: the published trees recorded in labs/base.toml match the
    files, every stage's patches apply, every lab has its README, notebook, deck,
    datasets and grading cases, and each README shows its manifest's hints."""
    assert dev.check(load_lab(LABS[0]).root) == []


@pytest.mark.parametrize(("slug", "variant"), VARIANTS)
def test_variant_builds_and_passes_its_unit_tests(slug: str, variant: str) -> None:
    lab = load_lab(slug)
    built = build_variant(lab, variant, log=lambda _: None)
    assert run_tests(lab, built, built.src.parent / f"test-{variant}.log")  # they ran, and passed


@pytest.mark.parametrize("slug", [s for s in LABS if load_lab(s).regression_tests])
def test_the_solutions_regression_test_fails_on_broken(slug: str, tmp_path: Path) -> None:
    """The fix ships as a real one does, with a regression test that fails without it:
    broken with only the solution's regression tests copied in must fail them."""
    lab = load_lab(slug)
    materialise(lab, "fixed", tmp_path / "fixed")
    src = tmp_path / "broken-with-test"
    materialise(lab, "broken", src)
    for rel in lab.regression_tests:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tmp_path / "fixed" / rel, src / rel)
    built = build_tree(lab, src, "broken + regression tests", log=lambda _: None)
    log = built.src.parent / "regression-on-broken.log"
    with pytest.raises(LeakLabError):
        run_tests(lab, built, log)
    text = log.read_text(errors="replace")
    assert any(Path(rel).stem in text for rel in lab.regression_tests), text[-2000:]


@pytest.mark.parametrize("slug", LABS)
def test_captured_datasets_are_complete(slug: str) -> None:
    lab = load_lab(slug)
    runs = dataset.read_folder(lab.root / "datasets" / slug)
    assert {d.variant for d in runs} >= {"broken", "fixed"}, "capture broken and fixed"
    for ds in runs:
        assert ds.meta["lab"] == slug and ds.meta["load_result"].get("done")
        assert set(lab.analysis.series) <= set(ds.frame["series"]), ds.name
        assert (lab.root / "datasets" / slug / f"{ds.name}.csv").stat().st_size < 1_000_000


@pytest.mark.parametrize("slug", LABS)
def test_compare_shows_every_captured_variant_in_one_table(slug: str) -> None:
    """`leaklab compare NN --from datasets`: one row per captured run, and every other
    implementation (lab 05's Tokio rewrite) beside broken and fixed."""
    lab = load_lab(slug)
    runs = dataset.read_folder(lab.root / "datasets" / slug)
    summaries = [report.summarise(lab, ds) for ds in runs]
    variants = {s.variant for s in summaries}
    assert variants >= {"broken", "fixed", *(i.name for i in lab.implementations)}
    if lab.implementations:  # compared on latency as well as memory
        assert all(s.latency_ms for s in summaries), [s.name for s in summaries]


def _status(root: Path) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True
    ).stdout


# Two notebooks per lab: the measuring one ends at the exercise, the diagnosis one holds
# the answer, the fixed runs and the reproduction.
NOTEBOOKS = [f"{slug}{suffix}" for slug in LABS for suffix in ("", "-diagnosis")]


@pytest.mark.parametrize("start", ["repository root", "notebooks/"])
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_top_to_bottom_from_where_jupyter_starts(name: str, start: str) -> None:
    """VS Code in a Codespace starts the kernel at the repository root, JupyterLab in the
    notebook's folder: both must work, on the project's kernel, and re-running a notebook
    writes nothing that git tracks or would show as new."""
    root = load_lab(LABS[0]).root
    notebook = root / "notebooks" / f"{name}.ipynb"
    assert notebook.is_file(), f"{notebook} is missing"
    before = _status(root)
    execute(notebook, in_place=False, cwd=root if start == "repository root" else None)
    assert _status(root) == before, "the notebook wrote into the repository"


@pytest.mark.leak
@pytest.mark.parametrize("slug", LABS)
def test_broken_grows_and_fails_grading_fixed_does_not(slug: str) -> None:
    """The course checks itself, graded exactly as a learner is: broken fails on a
    growing verdict series, the solution passes, and the two are far apart."""
    lab = load_lab(slug)
    broken, fixed = (grade(lab, variant, log=print) for variant in ("broken", "fixed"))
    for result in (broken, fixed):
        print(json.dumps(result.to_json(), default=str))  # the figures, in the CI log
    assert (broken.passed, broken.verdict) == (False, "grows"), broken.reason
    assert fixed.passed, f"{fixed.stage}: {fixed.reason}"
    assert broken.slope is not None and fixed.slope is not None
    b = Fit(broken.slope["slope"], broken.slope["low"], broken.slope["high"], 0)
    f = Fit(fixed.slope["slope"], fixed.slope["low"], fixed.slope["high"], 0)
    # Far apart in the lab's own unit: the gap between the intervals is at least the
    # growth threshold. (A ratio of slopes is not used: an adaptive run stops at the first
    # decisive look, so the solution's interval width, and with it any ratio, depends on
    # when that was; CI saw lab 04 at 8x with both verdicts clear.)
    assert b.low - f.high >= lab.analysis.grows_above, (b, f)


@pytest.mark.parametrize("slug", [s for s in LABS if (GRADING / s).is_dir()])
def test_grading_has_alternatives_and_wrong_fixes(slug: str) -> None:
    for folder in ("pass", "fail"):
        assert len(list((GRADING / slug / folder).glob("*.patch"))) >= 2, f"{slug}/{folder}"


@pytest.mark.parametrize("slug", [s for s in LABS if (GRADING / s).is_dir()])
def test_an_instructor_can_diff_a_submission_against_the_solution(slug: str) -> None:
    """`leaklab diff` on a real submission: the learner's hunks first, then every stage."""
    lab = load_lab(slug)
    submission = sorted((GRADING / slug / "pass").glob("*.patch"))[0]
    parts = diff.sections(lab, f"patch:{submission}")
    assert len(parts) == 1 + len(lab.patches)
    added = [
        line
        for line in submission.read_text().splitlines()
        if line.startswith("+") and not line.startswith("+++") and line[1:].strip()
    ]
    assert added and added[0] in parts[0][1], "the submission's change is the first section"
    assert diff.to_html(lab, parts).count("<section>") == len(parts)


@pytest.mark.parametrize("case", all_cases(), ids=lambda c: c.id)
def test_every_grading_case_declares_its_family_and_stage(case: Case) -> None:
    """The sidecar is read by the two tests below: a case without one would be graded
    as a passing fix, and a failing case without a stage could fail anywhere."""
    assert case.patch.with_suffix(".toml").is_file(), f"{case.id}: no sidecar"
    assert case.family, f"{case.id}: no family"
    if case.folder == "pass":
        assert case.stage is None and case.reason is None, f"{case.id}: a passing case"
    elif case.folder == "fail":
        assert case.stage in GATE_STAGES + LOAD_STAGES, f"{case.id}: stage {case.stage}"
        assert case.reason, f"{case.id}: no reason"
        re.compile(case.reason)
    else:
        assert case.measured, f"{case.id}: measured once, but no recorded result"
        if case.recording.is_file():
            assert case.stage in LOAD_STAGES and case.reason, f"{case.id}: recorded, no stage"


@pytest.mark.parametrize("slug", [s for s in LABS if (GRADING / s).is_dir()])
def test_every_load_stage_check_rejects_a_case_in_ci(slug: str) -> None:
    """A check no case fails in CI may be trivially true (a counter the learner's code
    decides, a behaviour satisfied by doing nothing): each one rejects at least one
    case in CI, graded under load or judged on its recorded run (below), or is named,
    with why, in grading/UNCOVERED.toml, a list that may only shrink (an entry a case
    now covers fails this test too)."""
    cases = GRADING_CASES + RECORDED_CASES
    declared = [c for c in cases if c.slug == slug and c.stage in LOAD_STAGES]
    missing = {
        name
        for stage, name in load_stage_checks(slug)
        if not any(
            c.stage == stage and (stage != "checks" or name in (c.reason or "")) for c in declared
        )
    }
    listed = tomllib.loads((GRADING / "UNCOVERED.toml").read_text()).get(slug, {})
    assert not missing - set(listed), (
        f"{slug}: no case in CI fails at {sorted(missing - set(listed))}"
    )
    covered = sorted(set(listed) - missing)
    assert not covered, f"{slug}: now rejected by a case, remove from UNCOVERED.toml: {covered}"
    assert all(str(why).strip() for why in listed.values()), f"{slug}: an entry without a reason"


def _said(result: GradeResult) -> str:
    """What a failed grade tells the learner: its reason and every failed assertion it
    read from the test log (the reason quotes the first three)."""
    return "\n".join([result.reason, *result.failed_tests])


@pytest.mark.parametrize("case", GRADING_CASES, ids=lambda c: c.id)
def test_every_grading_case_reaches_the_load_or_fails_where_it_declares(case: Case) -> None:
    """A grade up to the load (scope, build, the course's unit tests), on the quick
    tests' two workers. A case declared to fail at a gate stage is graded whole here,
    and must fail there, for its declared reason; every other case must reach the load,
    and its build and test pass, cached, let its measured grade below start at the load."""
    result = gate(load_lab(case.slug), case.variant, log=print)
    if case.at_the_gate:
        assert not result.passed and result.stage == case.stage, f"{result.stage}: {result.reason}"
        assert case.reason and re.search(case.reason, _said(result)), result.reason
    else:
        assert result.stage == READY, f"{result.stage}: {result.reason}"


@pytest.mark.parametrize("case", RECORDED_CASES, ids=lambda c: c.id)
def test_a_case_measured_once_fails_where_it_declares_on_its_recorded_run(case: Case) -> None:
    """A case measured once under load, out of CI for time, keeps the dataset its grade
    wrote; CI judges that run again with today's verdict, cross-check and checks (against
    today's captured solution run), so the check it declares is held to a real measured
    run in seconds. The recording must be of the tree the case makes today, measured
    from a clean commit: a change to the lab or the patch asks for a new recording."""
    recorded = dataset.read(case.recording)
    lab = published_lab(load_lab(case.slug))
    variant = str(recorded.meta.get("variant", ""))
    assert recorded.meta.get("lab") == case.slug, recorded.meta.get("lab")
    assert variant.startswith(PATCH_PREFIX) and Path(variant).name == case.patch.name, variant
    assert recorded.meta.get("git_dirty") is False, "recorded from a tree with uncommitted work"
    assert recorded.meta.get("load_params") == load_params(lab), "recorded under another load"
    assert recorded.meta.get("build_key") == variant_key(lab, case.variant, course_tests=True), (
        f"{case.id}: the recording measured another tree than the case makes today: grade "
        f"it again (`leaklab grade {case.slug[:2]} --patch {case.patch}`) and copy the new "
        "dataset in"
    )
    result = rejudge(lab, recorded)
    assert not result.passed and result.stage == case.stage, f"{result.stage}: {result.reason}"
    assert case.reason and re.search(case.reason, _said(result)), result.reason


@pytest.mark.leak
@pytest.mark.parametrize("case", MEASURED_CASES, ids=lambda c: c.id)
def test_grading_tells_fixes_from_symptom_hiding(case: Case) -> None:
    """Graded whole, as a learner is: a valid fix passes, a symptom-hider fails at the
    stage it declares, for its declared reason."""
    result = grade(load_lab(case.slug), case.variant, log=print)
    print(json.dumps(result.to_json(), default=str))  # the figures, in the CI log
    assert result.passed == case.should_pass, f"{result.stage}: {result.reason}"
    if not case.should_pass:
        assert result.stage == case.stage, f"{result.stage}: {result.reason}"
        assert case.reason and re.search(case.reason, _said(result)), result.reason


def test_the_readme_demo_command_runs(tmp_path: Path) -> None:
    """`make demo`, the README's first command, end to end (shortened to 20 s a run):
    it prints the table and the separation line and writes the plot. It asserts what the
    demo shows, not a verdict (the leak tests do that, alone on the machine), so it runs
    with the quick tests."""
    root = Path(__file__).resolve().parents[3]
    result = subprocess.run(
        ["make", "demo", "DURATION=20"],
        cwd=root,
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "steady-window slope" in result.stdout and "…" not in result.stdout
    assert "broken" in result.stdout and "fixed" in result.stdout
    plot = root / ".leaklab" / "reports" / "01-go-bulk-abort-runs.png"
    assert plot.is_file() and plot.stat().st_size > 10_000
