"""The grade as a learner reads it: verdict, figures beside broken and solution, a hint."""

from __future__ import annotations

from collections.abc import Iterator

from leaklab.analysis import unit_per_min
from leaklab.grading.grade import GradeResult
from leaklab.report import figure
from leaklab.spec import Lab


def grade_report(lab: Lab, result: GradeResult) -> Iterator[str]:
    series = lab.analysis.verdict_series
    unit = unit_per_min(series)
    mark = "[green]PASS[/green]" if result.passed else "[red]FAIL[/red]"
    yield f"{mark} {lab.slug} ({result.variant}): {result.reason}"
    if result.slope is not None:
        s = result.slope
        yield (
            f"  {series}: {s['slope']:.3g} {unit}, 95% CI [{s['low']:.3g}, {s['high']:.3g}]"
            f" (flat needs the upper bound < {lab.analysis.flat_below:g}; "
            f"{result.attempts} run{'s' if result.attempts > 1 else ''})"
        )
    if result.decided:
        # An unclear verdict is one the last look did not decide: not "decided after".
        when = "undecided after" if result.verdict == "unclear" else "decided after"
        yield f"  {when} {result.load_s or 0:.0f} s of load: {result.decided}"
    for name, figures in result.reference.items():
        shown = ", ".join(
            f"{k} {figure(v)}" for k, v in figures.items() if isinstance(v, int | float)
        )
        label = "solution" if name == "fixed" else name
        yield f"  captured {label}: {shown}"
    for check in result.checks:
        yield f"  [{'x' if check.passed else ' '}] {check.name}: {check.detail}"
    if result.own_tests:
        yield f"  your own tests (not graded; the course's tests decide): {result.own_tests}"
    if not result.passed and result.hint:
        yield f"  hint: {result.hint}"
    if result.dataset:
        yield f"  dataset: {result.dataset}"
