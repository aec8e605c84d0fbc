"""How often does the grader get it wrong? Grade the broken service and the solution
N times each and count the wrong verdicts (issue: a grader that fails a correct fix one
time in twenty is worse than no grader).

A wrong verdict is broken not failing on a `grows` verdict (passing, or failing for another
reason such as a run that did not start), or the solution failing. Each count comes with a
one-sided 95% Clopper-Pearson upper bound on the error rate (0 of 10 still allows up to
26%: more rounds narrow it). Also reported: seconds of load each verdict took (grades are
adaptive: the load stops at the first look that decides), and the whole grade's wall
time (build from cache, unit tests, start-up, load).

    make bench-grader LAB=03 N=10
    .venv/bin/python tools/leaklab/benchmarks/grader_error_rate.py 03 --rounds 10

`--case NAME` grades one of the lab's grading cases instead (tests/grading/<lab>/pass,
fail or measured-once/NAME.patch: a different valid fix, or a wrong one), where a wrong
verdict is the opposite of what the case declares: how often is a learner's own valid fix
failed?

Writes .leaklab/reports/grader-<lab>.json, with the commit it graded at, whether the lab's
folder had uncommitted changes and the toolchains (as a captured run records them), so a
report copied into datasets/<lab>/grader/ is checked like any dataset
(`leaklab.provenance`). A benchmark, not a test: it takes N x (two grades) of machine
time, and its figures belong in the lab's README.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import statistics
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

from scipy import stats

from leaklab.grading.grade import grade
from leaklab.paths import work_dir
from leaklab.runner import git_provenance, tool_versions
from leaklab.spec import Lab, load_lab
from leaklab.variants import PATCH_PREFIX

EXPECTED = {"broken": False, "fixed": True}  # does the grade pass?
GRADING = Path(__file__).resolve().parents[1] / "tests" / "grading"


def grading_case(lab: Lab, name: str) -> tuple[str, bool]:
    """The variant that grades grading case `name`, and whether it should pass."""
    for folder, should_pass in (("pass", True), ("fail", False)):
        patch = GRADING / lab.slug / folder / f"{name}.patch"
        if patch.is_file():
            return f"{PATCH_PREFIX}{patch}", should_pass
    once = GRADING / lab.slug / "measured-once" / f"{name}.patch"
    if once.is_file():  # a wrong case declares the stage it fails at; a valid one does not
        meta = tomllib.loads(once.with_suffix(".toml").read_text())
        return f"{PATCH_PREFIX}{once}", "stage" not in meta
    where = f"{GRADING / lab.slug}/pass, fail or measured-once"
    raise SystemExit(f"no grading case {name!r} in {where}")


def upper_bound(wrong: int, n: int, confidence: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound on a rate seen `wrong` times in `n`."""
    return 1.0 if wrong >= n else float(stats.beta.ppf(confidence, wrong + 1, n - wrong))


@contextlib.contextmanager
def _turn(lock: str | None) -> Iterator[None]:
    """Hold `lock` (an exclusive flock) for one grade; nothing when there is no lock."""
    if lock is None:
        yield
        return
    with Path(lock).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield  # closing the file releases the lock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lab")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument(
        "--variant", choices=sorted(EXPECTED), help="grade only this one (default: both)"
    )
    parser.add_argument("--case", help="grade this grading case instead (its file name)")
    parser.add_argument(
        "--lock",
        help="a file to flock around each grade, so the benchmark takes turns with other "
        "measurements on a shared machine instead of overlapping them",
    )
    args = parser.parse_args()
    lab = load_lab(args.lab)
    report: dict[str, object] = {
        **git_provenance(lab.root, lab.slug),
        "versions": tool_versions(lab),
    }
    plan = (
        {args.case: grading_case(lab, args.case)}
        if args.case
        else {
            variant: (variant, should_pass)
            for variant, should_pass in EXPECTED.items()
            if not args.variant or variant == args.variant
        }
    )
    for label, (variant, should_pass) in plan.items():
        wrong, seconds, walls, verdicts = 0, [], [], []
        for k in range(args.rounds):
            with _turn(args.lock):
                started = time.monotonic()
                result = grade(lab, variant, log=lambda _: None)
                walls.append(time.monotonic() - started)
            if args.case:
                right = result.passed == should_pass
            else:
                right = result.passed if should_pass else result.verdict == "grows"
            wrong += not right
            verdicts.append(f"{result.verdict} ({result.stage})")
            if result.load_s is not None:  # the last run's; a repeated run counts twice
                seconds.append(result.load_s * result.attempts)
            print(
                f"{label} {k + 1}/{args.rounds}: {'pass' if result.passed else 'fail'}, "
                f"{result.verdict}, {result.attempts} run(s), {walls[-1]:.0f} s; "
                f"{result.decided or 'whole run'}",
                flush=True,
            )
        figures: dict[str, object] = {
            "rounds": args.rounds,
            "wrong": wrong,
            "wrong_rate_upper_95": round(upper_bound(wrong, args.rounds), 3),
            "load_s_median": statistics.median(seconds) if seconds else None,
            "load_s_worst": max(seconds) if seconds else None,
            "grade_s_median": round(statistics.median(walls), 1),
            "grade_s_worst": round(max(walls), 1),
            "verdicts": verdicts,
        }
        report[label] = figures
        print(
            f"{label}: {wrong} wrong of {args.rounds} "
            f"(95% upper bound {figures['wrong_rate_upper_95']:.0%}); load to a verdict "
            f"median {figures['load_s_median']} s, worst {figures['load_s_worst']} s"
        )
    suffix = f"-{args.case or args.variant}" if args.case or args.variant else ""
    out = work_dir(lab.root) / "reports" / f"grader-{lab.slug}{suffix}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"report: {out}")


if __name__ == "__main__":
    main()
