"""The grade as the learner reads it: counts print as counts."""

from __future__ import annotations

from leaklab.grading.grade import GradeResult
from leaklab.grading.report import grade_report
from leaklab.spec import load_lab


def test_the_captured_runs_counts_read_as_counts_not_scientific_notation() -> None:
    result = GradeResult(
        lab="01-go-bulk-abort",
        variant="mine",
        reason="flat",
        reference={"fixed": {"load.ok": 3770.0, "last.backend_docs": 8752.0, "peak.rss": 0.5}},
    )
    lines = list(grade_report(load_lab("01"), result))
    captured = next(line for line in lines if line.startswith("  captured solution:"))
    assert captured == "  captured solution: load.ok 3,770, last.backend_docs 8,752, peak.rss 0.5"
    assert "e+0" not in "\n".join(lines)
