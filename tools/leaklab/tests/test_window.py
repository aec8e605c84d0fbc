"""The window rule (issue 40): the steady window ends when the load stops sending, before
anything the load or the harness does after it; what disturbs the service inside the
window (a forced GC, a class histogram), marked by the load, is left out of the fit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import publish

from leaklab.analysis import Fit, disturbed, load_seconds, series_fit, steady_window
from leaklab.dataset import Dataset
from leaklab.runner import RunOptions, run
from leaklab.spec import load_lab

# After its duration, this load waits a second and then posts one 20 MB body: an action
# after sending, as lab 03's load forces a node-wide GC and lab 04's takes a histogram.
AFTER_SENDING = """
time.sleep(1.0)
big = urllib.request.Request(url + "/ingest", data=b"x" * 20_000_000, method="POST")
urllib.request.urlopen(big, timeout=10).close()
time.sleep(1.0)
print(
    json.dumps({"done": True, "t_s": time.monotonic() - start, "sent": sent, "ok": ok, "errors": 0})
)
"""


def test_the_window_ends_when_the_load_stops_sending_not_when_it_exits(no_orphans: Path) -> None:
    load = no_orphans / "labs" / "90-fake" / "load" / "load.py"
    text = load.read_text()
    final = text.index('print(\n    json.dumps({"done": True')
    load.write_text(text[:final] + AFTER_SENDING)
    publish(no_orphans, "a load with an action after sending")
    lab = load_lab("90")
    result = run(lab, RunOptions("broken", {"duration": "3"}, snapshots=False), log=print)
    machine = result.data.meta["machine"]  # how busy the machine was, for the summary
    assert machine["cpus"] >= 1 and machine["load_avg_1m_end"] >= 0
    phases = result.data.meta["phases"]
    assert phases["load_s"] <= 3.0 and phases["load_exit_s"] >= 5.0, phases
    held = steady_window(result.data.series("held_bytes"), 0.5, load_seconds(result.data))
    # 100 KB bodies at 40/s for 3 s: about 12 MB; the 20 MB post came after the window.
    assert held["value"].max() < 15e6, held["value"].max()
    assert result.data.series("held_bytes")["value"].max() > 20e6  # recorded, not fitted
    fit = series_fit(result.data, "held_bytes", 0.5)
    assert fit is not None and 150 < fit.slope < 330, fit  # ~240 MB/min: the load's own


def test_what_the_load_marks_as_disturbing_is_left_out_of_the_fit() -> None:
    """A forced full GC in the window (lab 04's class histograms at 30 s and 60 s) drops
    the heap for a moment; marked by the load, it no longer moves the slope."""
    t = np.arange(0.0, 90.0, 0.5)
    heap = 100e6 + 2e6 * t / 60 + np.random.default_rng(0).normal(0, 0.2e6, t.size)
    for gc in (30.0, 60.0):  # each forced GC halves the heap, which refills over 4 s
        after = (t >= gc) & (t < gc + 4)
        heap[after] -= 50e6 * (1 - (t[after] - gc) / 4)
    rows = [(x, "heap_bytes", y) for x, y in zip(t, heap, strict=True)]
    marks = [(30.0, "load_disturb_s", 5.0), (60.0, "load_disturb_s", 5.0)]

    def fitted(extra: list[tuple[float, str, float]]) -> Fit:
        frame = pd.DataFrame(rows + extra, columns=["t_s", "series", "value"])
        ds = Dataset("fixed", frame, {"phases": {"load_s": 90.0}})
        fit = series_fit(ds, "heap_bytes", 10.0)
        assert fit is not None
        return fit

    bent, marked = fitted([]), fitted(marks)
    assert marked.low <= 2.0 <= marked.high and marked.high - marked.low < 1, marked
    # Unmarked, the two dips move the slope and widen its interval many times over.
    assert bent.high - bent.low > 5 * (marked.high - marked.low), (bent, marked)
    assert abs(bent.slope - 2.0) > 3 * abs(marked.slope - 2.0), (bent, marked)


def test_a_load_line_with_disturb_s_is_recorded_as_a_span_to_leave_out(no_orphans: Path) -> None:
    load = no_orphans / "labs" / "90-fake" / "load" / "load.py"
    text = load.read_text()
    loop = text.index("while (elapsed")
    mark = 'print(json.dumps({"t_s": 0.0, "disturb_s": 1.5}), flush=True)\n'
    load.write_text(text[:loop] + mark + text[loop:])
    publish(no_orphans, "a load that marks a disturbance at its start")
    result = run(load_lab("90"), RunOptions("broken", {"duration": "3"}, snapshots=False))
    [(start, end)] = disturbed(result.data)
    assert -0.5 < start < 1.0 and end == pytest.approx(start + 1.5)
    held = result.data.series("held_bytes")
    kept = steady_window(held, 0.0, 3.0, disturbed(result.data))
    assert len(kept) < len(steady_window(held, 0.0, 3.0))
    assert not ((kept["t_s"] >= start) & (kept["t_s"] <= end)).any()


def test_a_disturbance_that_moves_the_level_for_good_does_not_bend_the_slope() -> None:
    """Lab 04's forced full GC frees old garbage that young collections would have kept for
    minutes: the heap after GC of a flat run steps down 0.7 MB at 60 s and stays there
    (its fixed capture). Fitted with one level, that step reads as a falling heap; marked,
    the stretch after it gets its own level and the shared slope is flat, for a step
    series (heap after GC) and a continuous one."""
    rng = np.random.default_rng(1)
    t = np.arange(0.0, 90.0, 0.5)
    gc_at = np.arange(1.0, 90.0, 6.0)  # a young collection every 6 s sets the next level
    level = 14.5e6 + rng.normal(0, 0.05e6, gc_at.size)
    level[gc_at > 60.0] -= 0.7e6
    after_gc = level[np.searchsorted(gc_at, t, side="right") - 1].clip(min=0)
    continuous = 14.5e6 - 0.7e6 * (t > 60.0) + rng.normal(0, 0.05e6, t.size)
    marks = [(60.0, "load_disturb_s", 1.0)]

    def fitted(series: str, values: np.ndarray, extra: list[tuple[float, str, float]]) -> Fit:
        rows = [(x, series, y) for x, y in zip(t, values, strict=True)]
        frame = pd.DataFrame(rows + extra, columns=["t_s", "series", "value"])
        ds = Dataset("fixed", frame, {"phases": {"load_s": 90.0}})
        fit = series_fit(ds, series, 20.0)
        assert fit is not None
        return fit

    for series, values in (("after_gc_bytes", after_gc), ("used_bytes", continuous)):
        bent, marked = fitted(series, values, []), fitted(series, values, marks)
        assert bent.high < -0.3, (series, bent)  # a flat run read as shrinking
        assert marked.low <= 0.0 <= marked.high and abs(marked.slope) < 0.2, (series, marked)
