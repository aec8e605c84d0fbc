"""`leaklab grade`: does a learner's fix remove the leak, measured like the solution?

A grade is a sequence of gates, each of which can only fail with a report, never with a
traceback: the change stays inside the service; the tree builds; the lab's own unit
tests pass; the service runs under the lab's standard load (no overrides); the verdict
series is `flat` by the lab's written rule; and every check in the lab's `[grade]`
table holds. The checks are what stop a fix that only hides the symptom: a service that
stops answering, or answers without doing the work, is flat too.

`[grade]` in lab.toml:

    hint = "what to look at when the grade fails"
    duration_s = 40                # optional: a shorter run at the same rate and mix
    [[grade.checks]]
    name = "answers the patient agents"
    measure = "load.ok"            # load.<final count> | last.<series> | peak.<series>
                                   # | median.<series> (over the steady window)
    at_least = 0.9                 # (or at_most) a multiple of...
    of = "solution"                # ...the same measure in the captured solution run,
                                   # or another measure of this run (e.g. "load.ok")

`at_least` guards the work (a fix must still do what the solution does); `at_most`
guards a level the solution keeps (e.g. a per-process memory median), for leaks that a
slope alone does not pin down.

The run is adaptive (`leaklab.sequential`): it looks at the verdict every 10 s of steady
window and stops the load at the first look that decides it; `fixed_duration=True` runs
the whole duration. A load count compared with the solution's (`load.ok` of "solution")
is compared per second of load, since the two runs may have lasted different times.
When the verdict is `unclear` (the interval straddles the threshold at the last look)
the run is repeated once, and the second run decides: noise must not flip a grade.
"""

from __future__ import annotations

import math
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from leaklab import base, dataset, report, sequential
from leaklab.analysis import Fit, load_seconds, series_fit, steady_window
from leaklab.build import build_variant, run_tests
from leaklab.errors import LeakLabError
from leaklab.grading import failures
from leaklab.paths import work_dir
from leaklab.runner import RunOptions, run
from leaklab.spec import GradeCheck, GradeSpec, Lab, parse_lab
from leaklab.variants import (
    PATCH_PREFIX,
    course_test_patterns,
    dataset_name,
    materialise,
    outside_editable,
    patched_files,
)

# A learner's unit tests that take longer than this are a deadlock, not a slow machine.
TEST_TIMEOUT_S = 300.0


READY = "ready"  # a `gate` stage: built, tested, ready for the load
MAX_SCORE = 10  # points per lab (the result format's `max_score`)


@dataclass
class CheckResult:
    name: str
    passed: bool
    measured: float | None
    limit: float | None  # the bound the measure had to meet
    detail: str


@dataclass
class GradeResult:
    """Everything a learner, an instructor or an autograder needs from one grade."""

    lab: str
    variant: str
    passed: bool = False
    # passed, failed, not_attempted (nothing edited: decided in under a second), or
    # error (the grade could not run here: a missing toolchain, not the learner's fault)
    status: str = "failed"
    stage: str = "scope"  # the gate that decided: scope, build, tests, run, verdict, checks
    reason: str = ""
    # Shown only on a failure, and only the advice that fits the stage that failed.
    hint: str | None = None
    # The course's tests that failed: their assertions, not the log's tail.
    failed_tests: list[str] = field(default_factory=list)
    verdict: str | None = None
    slope: dict[str, float] | None = None
    thresholds: dict[str, float] = field(default_factory=dict)
    checks: list[CheckResult] = field(default_factory=list)
    reference: dict[str, dict[str, float | str | None]] = field(default_factory=dict)
    attempts: int = 0
    dataset: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    # Files the learner changed outside the editable folders: not graded, listed.
    ignored: list[str] = field(default_factory=list)
    # The learner's own tests, when they differ from the course's: run, reported, never
    # decisive ("passed", or "failed: <why>"); None when the learner left them alone.
    own_tests: str | None = None
    # An adaptive run's deciding look: "look 2 of 5 at 30 s: grows (... at 98.86%)".
    decided: str | None = None
    load_s: float | None = None  # seconds of load the verdict took
    series: str | None = None
    unit: str | None = None
    started_at: str = ""
    seconds: float = 0.0
    # From the run's summary (`leaklab.limit`): when RSS and the verdict series would
    # reach the lab's memory limit at the measured slope, one object per series.
    time_to_limit: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def measure(ds: dataset.Dataset, name: str, warmup_s: float = 0.0) -> float | None:
    """One figure of a run: a load program's final count, or a series' last, peak or
    median value (the median over the steady window: after `warmup_s`, during load)."""
    kind, _, key = name.partition(".")
    if kind == "load":
        value = ds.meta.get("load_result", {}).get(key)
        return float(value) if isinstance(value, int | float) else None
    frame = ds.series(key)
    if kind == "median":
        frame = steady_window(frame, warmup_s, load_seconds(ds))
    values = frame["value"]
    if values.empty:
        return None
    if kind == "last":
        return float(values.iloc[-1])
    return float(values.median() if kind == "median" else values.max())


def evaluate(
    check: GradeCheck,
    mine: dataset.Dataset,
    solution: dataset.Dataset | None,
    warmup_s: float = 0.0,
) -> CheckResult:
    got = measure(mine, check.measure, warmup_s)
    if check.of == "solution":
        base = measure(solution, check.measure, warmup_s) if solution is not None else None
        source = "the captured solution run"
        per_second = _load_ratio(mine, solution) if check.measure.startswith("load.") else 1.0
        if base is not None and per_second != 1.0:
            # Counts grow with the load's length: the solution's, per second of this run.
            base *= per_second
            source += " (per second of load)"
    else:
        base = measure(mine, check.of, warmup_s)
        source = check.of
    if got is None or base is None:
        missing = check.measure if got is None else f"{check.of} ({source})"
        return CheckResult(check.name, False, got, None, f"{missing} was not measured")
    if base <= 0:
        # A multiple of zero is zero: `at_least 0.9 x 0` holds for a service that did
        # nothing at all. A reference that is zero cannot judge anything.
        detail = f"the reference {check.of} ({source}) is {base:g}: unusable as a reference"
        return CheckResult(check.name, False, got, None, detail)
    limit = check.factor * base
    ok = got >= limit if check.bound == "at_least" else got <= limit
    sign = ">=" if check.bound == "at_least" else "<="
    detail = f"{check.measure} = {got:g}, needs {sign} {check.factor:g} x {source} = {limit:g}"
    return CheckResult(check.name, ok, got, limit, detail)


def _load_ratio(mine: dataset.Dataset, solution: dataset.Dataset | None) -> float:
    """This run's seconds of load over the solution's (1 when either is unknown)."""
    mine_s = load_seconds(mine)
    solution_s = load_seconds(solution) if solution is not None else math.inf
    if not (0 < mine_s < math.inf and 0 < solution_s < math.inf):
        return 1.0
    return mine_s / solution_s


def published_lab(lab: Lab) -> Lab:
    """The lab as the course published it: lab.toml, load, solution and datasets read
    from the published trees (`leaklab.base`), whatever the learner changed or committed."""
    course = base.find(lab.root, lab.slug).course()
    return parse_lab(course / "labs" / lab.slug / "lab.toml", lab.root, source=course)


def ignored_changes(published: Lab, variant: str) -> list[str]:
    """What the learner changed that a grade does not take: every file outside the
    editable folders, committed or not (lab.toml, load/, a fake peer, solutions/,
    datasets/), as paths from the repository root."""
    slug = published.slug
    found = []
    for folder in ("labs", "solutions", "datasets"):
        mine = published.root / folder / slug
        for path in base.differences(published.files / folder / slug, mine):
            if folder == "labs" and _is_editable(published, path):
                continue
            found.append(f"{folder}/{slug}/{path}")
    for name in base.SHARED:  # the load kit: a grade builds the load with the published one
        mine = published.root / "labs" / name
        found += [
            f"labs/{name}/{p}" for p in base.differences(published.files / "labs" / name, mine)
        ]
    if variant.startswith(PATCH_PREFIX):
        with tempfile.TemporaryDirectory() as tmp:
            broken, candidate = Path(tmp) / "broken", Path(tmp) / "candidate"
            materialise(published, "broken", broken)
            materialise(published, variant, candidate)
            found += [f"labs/{slug}/{p}" for p in outside_editable(published, candidate, broken)]
        # Fixtures are restored when the tree is made, so the trees cannot show them.
        patch = Path(variant[len(PATCH_PREFIX) :])
        fixtures = [f for f in patched_files(patch) if f"service/{f}" in published.fixtures]
        found += [f"labs/{slug}/service/{f}" for f in fixtures]
    return sorted(set(found))


def _is_editable(lab: Lab, path: str) -> bool:
    if path in lab.fixtures:
        return False
    return any(path == e or path.startswith(e + "/") for e in lab.editable)


def reference(lab: Lab) -> dict[str, dataset.Dataset]:
    """The captured broken and solution runs, when the lab has them."""
    folder = lab.dataset_dir
    found = {}
    for name in ("broken", "fixed"):
        if (folder / f"{name}.json").is_file():
            found[name] = dataset.read(folder / f"{name}.json")
    return found


def grade(
    lab: Lab,
    variant: str = "mine",
    log: Callable[[str], None] = print,
    retries: int = 1,
    fixed_duration: bool = False,
) -> GradeResult:
    started = time.monotonic()
    lab = published_lab(_not_an_implementation(lab, variant))
    result = _graded(lab, variant, retries, fixed_duration, log)
    result.started_at = datetime.now(UTC).isoformat(timespec="seconds")
    result.seconds = round(time.monotonic() - started, 1)
    result.status = "passed" if result.passed else result.status
    result.hint = hint_for(lab, result)
    return result


def _graded(
    lab: Lab, variant: str, retries: int, fixed_duration: bool, log: Callable[[str], None]
) -> GradeResult:
    if variant == "mine" and not edited(lab):
        result = GradeResult(lab.slug, variant, status="not_attempted")
        result.thresholds = _thresholds(lab)
        # What they did change, outside what the lab lets them edit, is still worth saying.
        result.ignored = ignored_changes(lab, variant)
        return _fail(result, "scope", "nothing changed in the lab's editable folders")
    result = _gate(lab, variant, log)
    if result.stage != READY:
        return result
    refs = reference(lab)
    _describe_references(lab, lab.grade, refs, result)
    mine = _measure(lab, RunPlan(variant, lab.grade, retries, not fixed_duration), result, log)
    if mine is None:
        return result
    return _judge(lab, lab.grade, mine, refs.get("fixed"), result)


def edited(lab: Lab) -> bool:
    """Whether the learner's tree differs from the published service (without building
    it): a lab nobody touched is "not attempted" at once, not built and loaded."""
    with tempfile.TemporaryDirectory() as tmp:
        broken, mine = Path(tmp) / "broken", Path(tmp) / "mine"
        materialise(lab, "broken", broken)
        materialise(lab, "mine", mine)
        return bool(base.differences(broken, mine))


def hint_for(lab: Lab, result: GradeResult) -> str | None:
    """The advice that fits the gate that failed; none on a pass or when nothing was
    tried. The lab's own hint is about the leak, so it goes with a verdict only."""
    if result.passed or result.status == "not_attempted":
        return None
    number = lab.slug.split("-", 1)[0]
    if result.stage == "build" and "does not apply" in result.reason:
        return (
            "a submitted patch must apply to the published service: make it with `git diff` "
            "against the published lab, from the repository root or inside "
            f"labs/{lab.slug}/service/"
        )
    if result.stage == "build":
        return "the service must build as published: read the compiler's message above"
    if result.stage == "tests":
        return (
            "the course's tests say what behaviour must still hold: run "
            f"`leaklab test {number} --variant {result.variant}` and read the failed assertion"
        )
    if result.stage == "run":
        return (
            f"the service must start and answer under load: `leaklab run {number} "
            f"--variant {result.variant}` shows its log"
        )
    if result.stage == "checks":
        failed = [c.name for c in result.checks if not c.passed]
        return (
            "the memory is flat, but the grade holds a fix to more than memory (the work "
            "it does, and what it costs, as the solution does), and this failed: "
            + "; ".join(failed)
        )
    return lab.grade.hint or None


def gate(lab: Lab, variant: str = "mine", log: Callable[[str], None] = print) -> GradeResult:
    """A grade up to the load: what it ignores, the build and the course's unit tests.
    A tree that fails here has its whole grade (`passed` False, `stage` says where);
    one that gets through has `stage == READY`. The build and a test pass are cached, so
    the grade that follows starts at the load."""
    return _gate(published_lab(_not_an_implementation(lab, variant)), variant, log)


def _not_an_implementation(lab: Lab, variant: str) -> Lab:
    if lab.implementation(variant):
        raise LeakLabError(
            f"{variant} is another implementation of lab {lab.slug}, not a fix of its service",
            "grade your fix in service/ (the default), or a patch with --patch",
        )
    return lab


def _thresholds(lab: Lab) -> dict[str, float]:
    return {"flat_below": lab.analysis.flat_below, "grows_above": lab.analysis.grows_above}


def _new_result(lab: Lab, variant: str) -> GradeResult:
    """A grade's result before anything is decided: the lab's rule and its series."""
    series = lab.analysis.verdict_series
    return GradeResult(
        lab.slug,
        variant,
        thresholds=_thresholds(lab),
        series=series,
        unit=report.unit_per_min(series),
    )


def _gate(lab: Lab, variant: str, log: Callable[[str], None]) -> GradeResult:
    result = _new_result(lab, variant)
    try:
        result.ignored = ignored_changes(lab, variant)
    except LeakLabError as exc:
        return _fail(result, "build", f"the service does not build: {exc.what}")
    if result.ignored:
        log(
            "ignored (outside what this lab lets you edit; the published version is used): "
            + ", ".join(result.ignored)
        )
    if failure := _build_and_test(lab, variant, result, log):
        return failure
    result.stage = READY
    return result


def _describe_references(
    lab: Lab, spec: GradeSpec, refs: dict[str, dataset.Dataset], result: GradeResult
) -> None:
    for name, ds in refs.items():
        fit = report.summarise(lab, ds).fits[lab.analysis.verdict_series]
        result.reference[name] = {"slope": _finite_or_none(fit.slope if fit else None)}
        for check in spec.checks:
            result.reference[name][check.measure] = measure(
                ds, check.measure, lab.analysis.warmup_s
            )


def _build_and_test(
    lab: Lab, variant: str, result: GradeResult, log: Callable[[str], None]
) -> GradeResult | None:
    """Build the learner's tree with the course's tests in it, and run them."""
    try:
        built = build_variant(lab, variant, log, course_tests=True)
    except LeakLabError as exc:
        return _fail(result, "build", f"the service does not build: {exc.what}")
    result.stage = "tests"
    test_log = built.src.parent / f"grade-test-{dataset_name(variant)}.log"
    try:
        if not run_tests(lab, built, test_log, timeout_s=TEST_TIMEOUT_S, reuse_pass=True):
            log(f"unit tests: already passed on this exact tree (build {built.key})")
    except LeakLabError as exc:
        text = test_log.read_text(errors="replace") if test_log.is_file() else exc.what
        result.failed_tests = failures.assertions(plain(text))
        if result.failed_tests:
            shown = "; ".join(result.failed_tests[:3])
            return _fail(
                result, "tests", f"the course's unit tests fail: {shown} (full log: {test_log})"
            )
        return _fail(result, "tests", f"the course's unit tests fail: {plain(exc.what)}")
    result.own_tests = _own_tests(lab, variant, log)
    return None


def _own_tests(lab: Lab, variant: str, log: Callable[[str], None]) -> str | None:
    """The learner's own tests, run on their tree as they wrote them, when they differ
    from the published ones: reported beside the grade, never part of it (a learner may
    weaken their own tests; the course's decide)."""
    with tempfile.TemporaryDirectory() as tmp:
        own, published = Path(tmp) / "own", Path(tmp) / "published"
        materialise(lab, variant, own)
        materialise(lab, "broken", published)
        if not _differs(own, published, course_test_patterns(lab)):
            return None
    log("your own tests differ from the course's: running them too (reported, not graded)")
    try:
        built = build_variant(lab, variant, log)
        run_tests(lab, built, built.src.parent / "grade-own-tests.log", TEST_TIMEOUT_S, True)
    except LeakLabError as exc:
        return f"failed: {plain(exc.what).splitlines()[0]}"
    return "passed"


def _differs(mine: Path, course: Path, patterns: list[str]) -> bool:
    def files(tree: Path) -> dict[str, bytes]:
        found = (p for pattern in patterns for p in tree.glob(pattern) if p.is_file())
        return {p.relative_to(tree).as_posix(): p.read_bytes() for p in found}

    return files(mine) != files(course)


@dataclass(frozen=True)
class RunPlan:
    """How a grade measures: the tree, its lab's `[grade]`, and how many re-runs."""

    variant: str
    spec: GradeSpec
    retries: int
    adaptive: bool


def _measure(
    lab: Lab, how: RunPlan, result: GradeResult, log: Callable[[str], None]
) -> dataset.Dataset | None:
    """Run under the standard load; an unclear verdict is measured once more."""
    params = _overrides(how.spec)
    # No idle phase and no snapshots: the verdict window is the load phase, and the
    # checks read the series and the load's counts. (`leaklab run` keeps both.)
    dest = work_dir(lab.root) / "grades" / lab.slug
    opts = RunOptions(
        how.variant,
        params,
        idle_s=0.0,
        snapshots=False,
        dest=dest,
        # One dataset per grade, never overwritten: a learner's earlier grades stay.
        name="graded-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        adaptive=how.adaptive,
        adaptive_self_driving=how.adaptive,
        course_tests=True,
    )
    mine = None
    for attempt in range(1 + how.retries):
        result.attempts = attempt + 1
        try:
            ran = run(lab, opts, log=log)
        except LeakLabError as exc:
            _fail(result, "run", f"the service did not run under load: {exc.what}")
            return None
        mine, result.dataset = ran.data, str(ran.csv)
        summary = _read_run(lab, mine, result, log)
        if summary.verdict != "unclear":
            break
        if attempt < how.retries:
            log(f"verdict unclear ({summary.fits[lab.analysis.verdict_series]}); measuring again")
    assert mine is not None
    result.versions = {k: str(v) for k, v in mine.meta.get("versions", {}).items()}
    return mine


def _overrides(spec: GradeSpec) -> dict[str, str] | None:
    """What a grade changes in the lab's standard load: its length, when `[grade]` sets one."""
    return {"duration": f"{spec.duration_s:g}"} if spec.duration_s else None


def load_params(lab: Lab) -> dict[str, str]:
    """The parameters a grade of this lab runs its load with (a run records them as
    `load_params`): a recorded grade measured under others is not today's grade."""
    return {**lab.params, **(_overrides(lab.grade) or {})}


def _read_run(
    lab: Lab, mine: dataset.Dataset, result: GradeResult, log: Callable[[str], None]
) -> report.RunSummary:
    """The run's verdict, slope, length and deciding look, into the result."""
    summary = report.summarise(lab, mine)
    if summary.busy:  # said as `run` says it: a verdict from a starved run is weak
        log(summary.busy)
    result.time_to_limit = _time_to_limit(summary)
    result.verdict = summary.verdict
    result.slope = _fit(summary.fits[lab.analysis.verdict_series])
    result.load_s = load_seconds(mine)
    decision = sequential.recorded(mine.meta)
    result.decided = str(decision) if decision else None
    return summary


def rejudge(lab: Lab, recorded: dataset.Dataset) -> GradeResult:
    """A grade's recorded run judged again, as the grade judged it when it was measured:
    the verdict, the RSS cross-check and every check, from the run's series and counts,
    against the captured solution run. A case measured once, out of CI for time, is
    judged by today's checks this way in seconds; the caller makes sure the recording
    measured the tree the case still makes (`leaklab.build.variant_key`)."""
    lab = published_lab(lab)
    result = _new_result(lab, str(recorded.meta.get("variant", "")))
    refs = reference(lab)
    _describe_references(lab, lab.grade, refs, result)
    _read_run(lab, recorded, result, log=lambda _: None)
    return _judge(lab, lab.grade, recorded, refs.get("fixed"), result)


def _judge(
    lab: Lab,
    spec: GradeSpec,
    mine: dataset.Dataset,
    solution: dataset.Dataset | None,
    result: GradeResult,
) -> GradeResult:
    """The verdict, the checks (always evaluated, so a failed verdict still shows every
    figure) and the cross-check of the verdict series against the process's RSS."""
    name = lab.analysis.verdict_series
    unit = report.unit_per_min(name)
    fit = series_fit(mine, name, lab.analysis.warmup_s)
    result.checks = [evaluate(c, mine, solution, lab.analysis.warmup_s) for c in spec.checks]
    if result.verdict != "flat":
        return _fail(
            result,
            "verdict",
            f"{name} is {result.verdict}: slope {fit} {unit} (95%), "
            f"needs the upper bound below {lab.analysis.flat_below:g}"
            + (f"; {result.decided}" if result.decided else ""),
        )
    if spec.rss_grows_above is not None:
        level = _decided_level(mine)
        rss = series_fit(mine, "rss_bytes", lab.analysis.warmup_s, level)
        if rss is not None and rss.low > spec.rss_grows_above:
            return _fail(
                result,
                "cross-check",
                f"{name} reads flat ({fit} {unit}) but the process's RSS, measured by the "
                f"harness, grows: {rss} MB/min at {100 * level:.2f}%, lower bound above "
                f"{spec.rss_grows_above:g}; the two series disagree",
            )
    result.stage = "checks"
    failed = [c for c in result.checks if not c.passed]
    if failed:
        return _fail(result, "checks", "; ".join(f"{c.name}: {c.detail}" for c in failed))
    result.passed = True
    result.reason = f"{name} is flat ({fit} {unit}) and every check holds"
    return result


def _time_to_limit(summary: object) -> list[dict[str, Any]] | None:
    """The run summary's time-to-limit figures (RSS and the verdict series), passed
    through unchanged; None where the summary has none."""
    found = getattr(summary, "time_to_limit", None)
    return [dict(t) for t in found] if found else None


def _decided_level(ds: dataset.Dataset) -> float:
    """The confidence the run's verdict was decided at, for the RSS cross-check over the
    same window. A run stopped at an interim look tests the RSS there as well, so it
    takes that look's share of the error rate too: at 95% it failed a valid fix in CI
    (lab 04, `always-drain-the-hub`, flat at 50 s of load while its JVM's RSS still rose,
    29.4 [16.5, 42.4] MB/min against a limit of 15). A run without looks: 95%."""
    decision = sequential.recorded(ds.meta)
    return decision.level if decision else 0.95


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def plain(text: str) -> str:
    """A tool's output without its terminal colour codes."""
    return ANSI.sub("", text)


def _fail(result: GradeResult, stage: str, reason: str) -> GradeResult:
    result.passed, result.stage, result.reason = False, stage, reason
    return result


def _fit(fit: Fit | None) -> dict[str, float] | None:
    if fit is None:
        return None
    return {"slope": fit.slope, "low": fit.low, "high": fit.high, "n": float(fit.n)}


def _finite_or_none(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value
