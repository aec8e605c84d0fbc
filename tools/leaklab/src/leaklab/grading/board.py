"""`leaklab class board`: one static page from many students' result files.

A row per student, a column per lab. Each cell: the status, the slope's interval drawn
against the lab's two thresholds, the seconds the grade took, and flags an instructor
acts on: *borderline* (the interval touches a threshold: regrade), *not the published
grader* (the result says so, or its grader's tree id is not the instructor's), *old
grader* (another harness version).

The folder holds one subfolder per student (`RESULTS/<student>/grade-NN.json`, what
`gh run download` or `gh release download` writes), or files named
`<student>--grade-NN.json`. A file that is not a result, a second result for the same
student and lab, or a lab the course does not have is listed under the table, one line
each with the file and why; the rest of the page is built regardless.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leaklab import __version__
from leaklab.grading import result as result_format

SEPARATOR = "--"


@dataclass
class Board:
    labs: list[str]
    cells: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # student, lab
    problems: list[str] = field(default_factory=list)


def collect(folder: Path, labs: list[str]) -> Board:
    board = Board(labs)
    for path in sorted(folder.rglob("*.json")):
        student = _student(folder, path)
        shown = path.relative_to(folder).as_posix()
        try:
            doc = result_format.read(path)
        except ValueError as exc:
            board.problems.append(f"{shown}: {exc}")
            continue
        if doc["lab"] not in labs:
            board.problems.append(f"{shown}: lab {doc['lab']} is not one of this course's labs")
            continue
        row = board.cells.setdefault(student, {})
        earlier = row.get(doc["lab"])
        doc["_file"] = shown
        if earlier is not None:
            keep, drop = sorted([earlier, doc], key=lambda d: d["started_at"], reverse=True)
            board.problems.append(
                f"{drop['_file']}: a second result for {student}, lab {doc['lab']} "
                f"(with {keep['_file']}): the newer one is on the board"
            )
            doc = keep
        row[doc["lab"]] = doc
    return board


def _student(folder: Path, path: Path) -> str:
    rel = path.relative_to(folder)
    if len(rel.parts) > 1:
        return rel.parts[0]
    return rel.name.split(SEPARATOR, 1)[0] if SEPARATOR in rel.name else rel.stem


def flags(doc: dict[str, Any], published_tree: str | None) -> list[str]:
    found = []
    if borderline(doc):
        found.append("borderline: regrade")
    grader = doc["grader"]
    tree = grader.get("tree") or grader.get("published_tree")
    if grader.get("published") is False or (published_tree and tree and tree != published_tree):
        found.append("not the published grader")
    if grader["version"] != __version__:
        found.append(f"old grader {grader['version']}")
    return found


# How close the deciding bound may come to its threshold before a verdict is called
# borderline: within a tenth of the threshold.
MARGIN = 0.1


def borderline(doc: dict[str, Any]) -> bool:
    """Whether the bound that decided touches its threshold: a pass's upper bound near
    `flat_below`, a fail's lower bound near `grows_above`; an unclear verdict always."""
    slope, t = doc.get("slope"), doc["thresholds"]
    if not slope or doc["stage"] not in ("verdict", "cross-check", "checks"):
        return False
    if doc.get("verdict") == "unclear":
        return True
    if doc["passed"]:
        return bool(slope["high"] >= (1 - MARGIN) * t["flat_below"])
    return bool(doc.get("verdict") == "grows" and slope["low"] <= (1 + MARGIN) * t["grows_above"])


def interval_svg(doc: dict[str, Any], width: int = 150, height: int = 26) -> str:
    """The interval as a bar on an axis from 0 to beyond the grows threshold, the two
    thresholds as vertical lines (green: flat below; red: grows above)."""
    slope, t = doc.get("slope"), doc["thresholds"]
    if not slope:
        return ""
    top = max(t["grows_above"] * 1.5, slope["high"] * 1.1, 1e-9)
    low_end = min(0.0, slope["low"] * 1.1)
    span = top - low_end

    def x(v: float) -> float:
        return 4 + (width - 8) * (min(max(v, low_end), top) - low_end) / span

    colour = {"passed": "#1a7f37", "failed": "#cf222e"}.get(doc["status"], "#9a6700")
    parts = [
        f'<svg class="ci" width="{width}" height="{height}" role="img" '
        f'aria-label="slope {slope["slope"]:.3g} in [{slope["low"]:.3g}, {slope["high"]:.3g}]">',
        f'<line x1="4" y1="20" x2="{width - 4}" y2="20" stroke="#8c959f"/>',
        f'<line x1="{x(t["flat_below"]):.1f}" y1="2" x2="{x(t["flat_below"]):.1f}" y2="24" '
        'stroke="#1a7f37" stroke-dasharray="2,2"/>',
        f'<line x1="{x(t["grows_above"]):.1f}" y1="2" x2="{x(t["grows_above"]):.1f}" y2="24" '
        'stroke="#cf222e" stroke-dasharray="2,2"/>',
        f'<rect x="{x(slope["low"]):.1f}" y="8" height="8" '
        f'width="{max(x(slope["high"]) - x(slope["low"]), 2):.1f}" fill="{colour}"/>',
        f'<circle cx="{x(slope["slope"]):.1f}" cy="12" r="2.5" fill="#000"/>',
        "</svg>",
    ]
    return "".join(parts)


def cell(doc: dict[str, Any] | None, published_tree: str | None) -> str:
    if doc is None:
        return '<td class="none">no result</td>'
    status = doc["status"]
    slope = doc.get("slope")
    figure = (
        f"{slope['slope']:.3g} [{slope['low']:.3g}, {slope['high']:.3g}] {doc.get('unit') or ''}"
        if slope
        else ("unchanged" if status == "not_attempted" else html.escape(doc["stage"]))
    )
    chips = "".join(
        f'<span class="flag">{html.escape(f)}</span>' for f in flags(doc, published_tree)
    )
    title = html.escape(f"{doc['_file']}: {doc['reason']}")
    return (
        f'<td class="{status}" title="{title}"><b>{status.replace("_", " ")}</b> '
        f"{doc['score']}/{doc['max_score']}<br>{interval_svg(doc)}<br>"
        f'<span class="fig">{html.escape(figure)}</span> · {doc["seconds"]:.0f} s{chips}</td>'
    )


def render(board: Board, published_tree: str | None, title: str = "Leak Lab: class board") -> str:
    head = "".join(f"<th>{html.escape(lab)}</th>" for lab in board.labs)
    rows = []
    for student in sorted(board.cells):
        row = board.cells[student]
        cells = "".join(cell(row.get(lab), published_tree) for lab in board.labs)
        total = sum(d["score"] for d in row.values())
        rows.append(f'<tr><th scope="row">{html.escape(student)}</th>{cells}<td>{total}</td></tr>')
    counts = {
        s: sum(1 for r in board.cells.values() for d in r.values() if d["status"] == s)
        for s in ("passed", "failed", "not_attempted", "error")
    }
    summary = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in counts.items())
    problems = "".join(f"<li>{html.escape(p)}</li>" for p in board.problems)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1rem; font-size: 13px; }}
table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #d0d7de; padding: 4px 6px; vertical-align: top; }}
td.passed {{ background: #dafbe1; }} td.failed {{ background: #ffebe9; }}
td.not_attempted {{ background: #f6f8fa; color: #57606a; }} td.error {{ background: #fff8c5; }}
td.none {{ color: #8c959f; }}
.fig {{ font-variant-numeric: tabular-nums; }}
.flag {{ display: inline-block; margin-left: 4px; padding: 0 4px; border-radius: 6px;
        background: #9a6700; color: #fff; font-size: 11px; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p id="counts">{len(board.cells)} students, {len(board.labs)} labs: {summary}.
The bar is the slope's interval; dashed lines: flat below (green), grows above (red).
Harness {html.escape(__version__)}.</p>
<table id="board"><thead><tr><th>student</th>{head}<th>score</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table>
<h2>Files not on the board</h2>
<ul id="problems">{problems or "<li>none</li>"}</ul>
</body></html>
"""
