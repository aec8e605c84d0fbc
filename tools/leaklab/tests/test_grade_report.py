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


def test_a_verdict_the_last_look_left_open_is_not_called_decided() -> None:
    """A learner read "decided after 40 s of load: look 2 of 2 at 40 s: not decided"."""
    result = GradeResult(
        lab="03-elixir-refc-binaries",
        variant="mine",
        verdict="unclear",
        load_s=40.0,
        decided="look 2 of 2 at 40 s: not decided (10.7 [-4.98, 26.4] at 99.00%)",
    )
    lines = list(grade_report(load_lab("03"), result))
    assert "  undecided after 40 s of load: look 2 of 2 at 40 s: not decided" in "\n".join(lines)
    result.verdict, result.decided = "flat", "look 1 of 2 at 30 s: flat (0.4 [0.3, 0.5] at 99.75%)"
    assert "  decided after 40 s of load: look 1 of 2" in "\n".join(
        grade_report(load_lab("03"), result)
    )
