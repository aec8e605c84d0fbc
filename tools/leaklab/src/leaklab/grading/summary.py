"""A grade result as Markdown for the Actions job summary ($GITHUB_STEP_SUMMARY): the
verdict, the slope and its interval beside the thresholds, each check, the seconds the
grade took, and the hint when it failed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

MARK = {"passed": "✅ passed", "failed": "❌ failed", "not_attempted": "not attempted"}
HEADER = (
    "| lab | result | score | slope [95% interval] | thresholds | seconds | decided by |",
    "| --- | --- | ---: | --- | --- | ---: | --- |",
)


def row(doc: dict[str, Any]) -> str:
    """One table row per lab."""
    slope = doc.get("slope")
    unit = doc.get("unit") or ""
    figure = (
        f"{slope['slope']:.3g} [{slope['low']:.3g}, {slope['high']:.3g}] {unit}" if slope else "-"
    )
    t = doc["thresholds"]
    bounds = f"flat < {t['flat_below']:g}, grows > {t['grows_above']:g}"
    mark = MARK.get(doc["status"], "⚠️ error")
    reason = _cell(doc["reason"]) if not doc["passed"] else "every check holds"
    return (
        f"| {doc['lab']} | {mark} | {doc['score']}/{doc['max_score']} | {figure} | {bounds} "
        f"| {doc['seconds']:.0f} | {doc['stage']}: {reason} |"
    )


def markdown(doc: dict[str, Any]) -> Iterator[str]:
    """A lab's section: its row, then each check, the failed tests and the hint."""
    yield f"### Lab {doc['lab']}"
    yield ""
    yield from HEADER
    yield row(doc)
    yield ""
    for check in doc["checks"]:
        yield f"- [{'x' if check['passed'] else ' '}] {check['name']}: {_cell(check['detail'])}"
    for failed in doc.get("failed_tests") or []:
        yield f"- failed test: `{failed}`"
    if doc.get("ignored"):
        yield f"- ignored (not yours to change): {', '.join(doc['ignored'])}"
    if doc.get("hint"):
        yield f"- **hint:** {doc['hint']}"
    grader = doc["grader"]
    if grader.get("published") is False:
        yield "- ⚠️ the grader that ran is not the course's published grader"
    yield ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
