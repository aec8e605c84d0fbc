"""The course checks itself: every lab's patches apply, every stage builds and passes its
unit tests, every notebook runs on the committed datasets, and (marked `leak`) broken
grows while fixed does not, measured under the lab's standard load."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from test_student import FIX as STUDENT_FIX

from leaklab import dataset, dev, report
from leaklab.analysis import Fit
from leaklab.build import build_tree, build_variant, run_tests
from leaklab.errors import LeakLabError
from leaklab.grading import diff
from leaklab.grading.grade import READY, gate, grade
from leaklab.notebooks import execute
from leaklab.spec import lab_slugs, load_lab
from leaklab.variants import materialise

LABS = lab_slugs()
VARIANTS = [(slug, v) for slug in LABS for v in load_lab(slug).variants]
GRADING = Path(__file__).parent / "grading"


# Written above a grading case's diff (git apply skips text before the first `diff`):
# the case never reaches the load, so its whole grade runs with the quick tests.
BEFORE_LOAD = "Grading: fails before the load"


def grading_cases() -> list[tuple[str, str, bool]]:
    """(lab, variant, should pass): each lab's alternative fixes (grading/<lab>/pass)
    pass and its symptom-hiding ones (grading/<lab>/fail) fail. Broken and fixed are
    graded by the leak test above."""
    cases = []
    for slug in LABS:
        if not (GRADING / slug).is_dir():
            continue
        for expected, folder in ((True, "pass"), (False, "fail")):
            for patch in sorted((GRADING / slug / folder).glob("*.patch")):
                cases.append((slug, f"patch:{patch}", expected))
    return cases


def fails_before_load(variant: str) -> bool:
    """Whether the case's patch says so above its first diff."""
    for line in Path(variant.removeprefix("patch:")).read_text().splitlines():
        if line.startswith(("diff --git", "--- ")):
            return False
        if line.startswith(BEFORE_LOAD):
            return True
    return False


def case_ids(cases: list[tuple[str, str, bool]]) -> list[str]:
    return [f"{s}-{Path(v).stem}" for s, v, _ in cases]


GRADING_CASES = grading_cases()
# The student's end-to-end test grades one passing case of lab 01 through the classroom
# workflow's command (test_student.py): that is the case's measured grade, so it is not
# measured a second time here (45 s of CI).
MEASURED_CASES = [
    c
    for c in GRADING_CASES
    if not fails_before_load(c[1]) and Path(c[1].removeprefix("patch:")) != STUDENT_FIX
]


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


@pytest.mark.parametrize(
    ("slug", "variant", "should_pass"), GRADING_CASES, ids=case_ids(GRADING_CASES)
)
def test_every_grading_case_reaches_the_load_or_fails_before_it(
    slug: str, variant: str, should_pass: bool
) -> None:
    """A grade up to the load (scope, build, the course's unit tests), on the quick
    tests' two workers. A case marked to fail before the load is graded whole here; every
    other case must reach the load, and its build and test pass, cached, let its
    measured grade below start at the load."""
    result = gate(load_lab(slug), variant, log=print)
    if fails_before_load(variant):
        assert not should_pass, f"a passing case cannot be marked '{BEFORE_LOAD}'"
        assert not result.passed and result.stage != READY, "it reached the load"
    else:
        assert result.stage == READY, f"{result.stage}: {result.reason}"


@pytest.mark.leak
@pytest.mark.parametrize(
    ("slug", "variant", "should_pass"), MEASURED_CASES, ids=case_ids(MEASURED_CASES)
)
def test_grading_tells_fixes_from_symptom_hiding(
    slug: str, variant: str, should_pass: bool
) -> None:
    result = grade(load_lab(slug), variant, log=print)
    print(json.dumps(result.to_json(), default=str))  # the figures, in the CI log
    assert result.passed == should_pass, f"{result.stage}: {result.reason}"


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
