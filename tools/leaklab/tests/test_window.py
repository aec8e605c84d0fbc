"""The window rule (issue 40): the steady window ends when the load stops sending, before
anything the load or the harness does after it."""

from __future__ import annotations

from pathlib import Path

from conftest import publish

from leaklab.analysis import load_seconds, series_fit, steady_window
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
