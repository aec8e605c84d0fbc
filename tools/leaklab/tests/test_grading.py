"""The grading package's pure parts: the failed assertion read from each toolchain's
test log (Go's is lab 01's real log from a grade of a wrong fix; the others are the
runners' documented output forms), the job summary and JUnit rows of a result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leaklab import dataset, report
from leaklab.errors import LeakLabError
from leaklab.grading import course, failures, junit, summary
from leaklab.grading import grade as grade_module
from leaklab.grading import result as result_format
from leaklab.limit import parse_size
from leaklab.spec import load_lab

ROOT = Path(__file__).resolve().parents[3]
REAL = Path(__file__).parent / "grading-results"

GO = """$ go test -race -count=1 -timeout 30s ./...
--- FAIL: TestDoSuccess (0.00s)
    engine_test.go:47: Do 0: seq = 0, want 1
    engine_test.go:47: Do 1: seq = 0, want 2
panic: test timed out after 30s
goroutine 1 [chan receive]:
FAIL	leaklab.dev/bulkabort/bulk	30.041s
ok  	leaklab.dev/bulkabort/checkin	1.032s
FAIL
"""
RUST = """running 3 tests
test memory_stays_bounded ... FAILED

failures:

---- memory_stays_bounded stdout ----

thread 'memory_stays_bounded' panicked at tests/regression.rs:41:5:
live heap 4441844 B above the budget 2048000 B
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
"""
# Rust 1.95's own output (a probe crate here, RUST_BACKTRACE=1): the thread's id follows
# its name, and the backtrace follows the message.
RUST_195 = """---- tests::peak_heap_stays_bounded stdout ----

thread 'tests::peak_heap_stays_bounded' (29164) panicked at src/lib.rs:5:9:
peak heap 2238577 bytes, limit 2048000
stack backtrace:
   0: __rustc::rust_begin_unwind
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5
   1: core::panicking::panic_fmt
"""
EXUNIT = """
  1) test a repeat request answers changed: false (SocketApi.ChannelTest)
     test/channel_test.exs:30
     Assertion with == failed
     code:  assert reply.changed == false
     left:  true
     right: false
"""
SCALA = """[info] BacklogRegressionSpec:
[info] - keeps the backlog bounded *** FAILED ***
[info]   1000 was not less than or equal to 64 (BacklogRegressionSpec.scala:22)
"""


def test_the_failed_assertion_of_each_toolchain() -> None:
    assert failures.assertions(GO) == ["TestDoSuccess: engine_test.go:47: Do 0: seq = 0, want 1"]
    assert failures.assertions(RUST) == [
        "memory_stays_bounded (tests/regression.rs:41:5): live heap 4441844 B above the "
        "budget 2048000 B"
    ]
    assert failures.assertions(RUST_195) == [
        "tests::peak_heap_stays_bounded (src/lib.rs:5:9): peak heap 2238577 bytes, limit 2048000"
    ]
    (ex,) = failures.assertions(EXUNIT)
    assert ex.startswith("a repeat request answers changed: false (SocketApi.ChannelTest)")
    assert "Assertion with == failed" in ex and "left:  true" in ex
    assert failures.assertions(SCALA) == [
        "keeps the backlog bounded: 1000 was not less than or equal to 64 "
        "(BacklogRegressionSpec.scala:22)"
    ]
    assert failures.assertions("ok  \tall good\n") == []


def test_the_summary_row_and_junit_of_a_real_failed_grade() -> None:
    doc = json.loads((REAL / "01-broken.json").read_text())
    assert result_format.problems(doc) == []
    text = "\n".join(summary.markdown(doc))
    s = doc["slope"]
    figures = f"{s['slope']:.3g} [{s['low']:.3g}, {s['high']:.3g}] MB/min"
    assert f"| 01-go-bulk-abort | ❌ failed | 0/10 | {figures} |" in text
    assert "**hint:**" in text
    xml = junit.to_xml(doc)
    assert 'name="verdict"' in xml and 'failures="2"' in xml  # the verdict and one check


def test_a_result_that_breaks_the_schema_says_where() -> None:
    doc = json.loads((REAL / "01-fixed.json").read_text())
    doc["status"] = "great"
    del doc["grader"]
    found = result_format.problems(doc)
    assert any(p.startswith("status:") for p in found)
    assert any("'grader' is a required property" in p for p in found)


def test_time_to_limit_is_passed_through_and_valid() -> None:
    """A run summary gives RSS's and the verdict series' time to the lab's memory limit
    (`leaklab.limit`); the grade result carries both, unchanged, and the schema takes
    them. Read from lab 01's captured broken run, so the two modules meet for real."""
    lab = load_lab("01")
    run = report.summarise(lab, dataset.read(ROOT / "datasets" / lab.slug / "broken.json"))
    passed = grade_module._time_to_limit(run)
    assert passed is not None
    assert {t["series"] for t in passed} == {"rss_bytes", lab.analysis.verdict_series}
    assert lab.limit is not None
    assert all(t["limit_bytes"] == parse_size(lab.limit.size) for t in passed)
    assert grade_module._time_to_limit(object()) is None
    doc = json.loads((REAL / "01-fixed.json").read_text())
    assert result_format.problems({**doc, "time_to_limit": passed}) == []
    assert result_format.problems({**doc, "time_to_limit": [{"series": "x"}]}) != []


def test_a_repository_without_history_has_no_published_commit(tmp_path: Path) -> None:
    """Bad input: `--course root` where there is no commit at all, or two first commits."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with pytest.raises(LeakLabError, match="no history"):
        course.root_commit(tmp_path)
    with pytest.raises(LeakLabError, match="is not in this repository"):
        course.resolve(tmp_path, "v2026.11")


def test_shell_completion_offers_the_labs() -> None:
    """Completion (ecosystem review, minor item 10): lab numbers and folders."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "leaklab")],  # completion keys on the program name
        env={
            **os.environ,
            "_LEAKLAB_COMPLETE": "complete_bash",
            "COMP_WORDS": "leaklab grade 01",
            "COMP_CWORD": "2",
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.stdout.split() == ["01", "01-go-bulk-abort"], done.stderr
    version = subprocess.run(
        [sys.executable, "-m", "leaklab", "--version"], capture_output=True, text=True, check=True
    )
    assert version.stdout.startswith("leaklab 0.")
