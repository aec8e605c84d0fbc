"""The class board in a real browser: a simulated class of 32 students built around real
grades of lab 01, with three bad files among them; the page is rendered by headless
Chromium (Debian's `chromium`, or the Chrome a GitHub runner has), and the test reads
what it shows: the rendered DOM and the screenshot's pixels."""

from __future__ import annotations

import copy
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from matplotlib import image

from leaklab import __version__
from leaklab.analysis import unit_per_min
from leaklab.grading import result as result_format
from leaklab.spec import lab_slugs, load_lab

REPO = Path(__file__).resolve().parents[3]
REAL = Path(__file__).parent / "grading-results"
CHROME = shutil.which("chromium") or shutil.which("google-chrome")
STUDENTS = 32


def simulated_class(folder: Path) -> dict[str, Any]:
    """32 students x 5 labs from the two real lab-01 results: the first two students'
    lab 01 are the real files as written; the rest vary status, figures and grader."""
    rng = random.Random(38)
    real = {v: json.loads((REAL / f"01-{v}.json").read_text()) for v in ("broken", "fixed")}
    expected = {"borderline": 0, "not published": 0, "old": 0}
    for i in range(STUDENTS):
        student = folder / f"student-{i:02d}"
        student.mkdir(parents=True)
        for slug in lab_slugs(REPO):
            lab = load_lab(slug, REPO)
            path = student / f"grade-{slug[:2]}.json"
            if i < 2 and slug.startswith("01"):
                shutil.copy(REAL / f"01-{'fixed' if i == 0 else 'broken'}.json", path)
                continue
            roll = rng.random()
            status = "not_attempted" if roll < 0.25 else "passed" if roll < 0.7 else "failed"
            doc = copy.deepcopy(real["fixed" if status == "passed" else "broken"])
            flat, grows = lab.analysis.flat_below, lab.analysis.grows_above
            doc.update(
                lab=slug,
                status=status,
                passed=status == "passed",
                score=10 if status == "passed" else 0,
                unit=unit_per_min(lab.analysis.verdict_series),
                series=lab.analysis.verdict_series,
                thresholds={"flat_below": flat, "grows_above": grows},
                seconds=round(rng.uniform(30, 200), 1),
                checks=[] if status == "not_attempted" else doc["checks"],
            )
            if status == "not_attempted":
                doc.update(stage="scope", slope=None, reason="nothing changed", hint=None)
            else:
                mid = (
                    rng.uniform(-0.3, 0.5) * flat
                    if status == "passed"
                    else rng.uniform(2, 8) * flat
                )
                half = rng.uniform(0.05, 0.6) * flat
                doc["slope"] = {"slope": mid, "low": mid - half, "high": mid + half, "n": 40.0}
                doc["verdict"] = "flat" if status == "passed" else "grows"
                doc["stage"] = "checks" if status == "passed" else "verdict"
                near = mid + half >= 0.9 * flat if status == "passed" else mid - half <= 1.1 * grows
                expected["borderline"] += near
            tree = real["fixed"]["grader"]["tree"]
            doc["grader"] = dict(doc["grader"], version=__version__, published=True, tree=tree)
            if i == 5:
                doc["grader"]["published"] = False
                expected["not published"] += 1
            if i == 6:
                doc["grader"]["version"] = "0.0.9"
                expected["old"] += 1
            path.write_text(json.dumps(doc))
    # The real broken grade ran a harness edited since the fixed one: another grader.
    expected["not published"] += real["broken"]["grader"]["tree"] != real["fixed"]["grader"]["tree"]
    # Bad input: not a result, a second result for one lab, a lab the course lacks.
    (folder / "student-03" / "notes.json").write_text('{"hello": "world"}')
    dup = json.loads((folder / "student-04" / "grade-02.json").read_text())
    dup["started_at"] = "2026-11-01T00:00:00+00:00"
    (folder / "student-04" / "grade-02-again.json").write_text(json.dumps(dup))
    other = dict(dup, lab="42-no-such-lab")
    (folder / "student-05" / "grade-42.json").write_text(json.dumps(other))
    return expected


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    assert CHROME is not None
    return subprocess.run(
        [
            CHROME,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def build_board(results: Path, page: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *(sys.executable, "-m", "leaklab", "class", "board", str(results), "-o", str(page)),
            # The published grader of this simulated course: the one the real grades ran.
            *("--grader-tree", json.loads((REAL / "01-fixed.json").read_text())["grader"]["tree"]),
        ],
        env={**os.environ, "LEAKLAB_ROOT": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_simulated_class_is_valid_where_it_should_be(tmp_path: Path) -> None:
    simulated_class(tmp_path)
    files = sorted(tmp_path.rglob("*.json"))
    bad = [f for f in files if result_format.problems(json.loads(f.read_text()))]
    assert [f.name for f in bad] == ["notes.json"]
    assert len(files) >= 30


@pytest.mark.skipif(CHROME is None, reason="no Chromium: apt-get install chromium")
def test_the_board_shows_every_student_and_names_every_bad_file(tmp_path: Path) -> None:
    results, page = tmp_path / "results", tmp_path / "board.html"
    expected = simulated_class(results)
    built = build_board(results, page)
    # Some files could not be used: exit 1, each named with why, the page built anyway.
    assert built.returncode == 1, built.stderr
    skipped = [line for line in built.stderr.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 3, built.stderr
    assert any("notes.json: does not match" in s for s in skipped)
    assert any("grade-02-again.json: a second result for student-04" in s for s in skipped)
    assert any("42-no-such-lab is not one of this course's labs" in s for s in skipped)

    dom = chromium("--dump-dom", page.as_uri(), profile=tmp_path / "profile").stdout
    body = dom.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(r'<tr><th scope="row">(student-\d\d)</th>', body)
    assert rows == [f"student-{i:02d}" for i in range(STUDENTS)]
    assert body.count("<td class=") == STUDENTS * len(lab_slugs(REPO))
    # The real files: the fixed run's upper bound (5.8) is well below flat_below 10, the
    # broken run's lower bound (69.6) far above grows_above 5: neither is borderline.
    assert body.count("borderline: regrade") == expected["borderline"] > 0
    assert body.count("not the published grader") == expected["not published"]
    assert body.count("old grader 0.0.9") == expected["old"]
    assert dom.count("<svg") > STUDENTS  # the intervals are drawn
    # The real grades keep their own figures: the fixed run's interval, from its file.
    fixed = json.loads((REAL / "01-fixed.json").read_text())["slope"]
    assert f"{fixed['slope']:.3g} [{fixed['low']:.3g}, {fixed['high']:.3g}]" in body

    shot = tmp_path / "board.png"
    chromium(
        "--window-size=1500,1900", f"--screenshot={shot}", page.as_uri(), profile=tmp_path / "p2"
    )
    pixels = image.imread(str(shot))
    assert pixels.shape[1] == 1500
    rgb = (pixels[..., :3] * 255).round()
    green = ((rgb == [218, 251, 225]).all(axis=-1)).mean()  # a passed cell's background
    red = ((rgb == [255, 235, 233]).all(axis=-1)).mean()  # a failed cell's
    assert green > 0.01 and red > 0.01, (green, red)
    if os.environ.get("LEAKLAB_BOARD_PNG"):  # docs/grading/board.png is made this way
        shutil.copy(shot, os.environ["LEAKLAB_BOARD_PNG"])
