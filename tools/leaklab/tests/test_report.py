"""What a run's summary says beside its figures: a window with no change, a machine too
busy for its figures to be trusted (issue 31's run-output items)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from leaklab import dataset, report
from leaklab.analysis import fit_slope
from leaklab.spec import load_lab


def test_a_window_with_no_change_says_so_instead_of_a_zero_width_interval() -> None:
    fit = fit_slope(np.arange(0, 30, 0.25), np.full(120, 105167.0), 1e6)
    assert fit is not None and str(fit) == "0 (no change in 120 samples)"


def test_a_run_on_a_busy_machine_says_its_figures_are_not_to_be_trusted() -> None:
    lab = load_lab("05")
    published = dataset.read(lab.dataset_dir / "broken.json")
    assert report.summarise(lab, published).busy is None
    # Issue 31's run: "ok 0, aborted 320" at a load average near 12 on 2 cores.
    busy = replace(
        published,
        meta={
            **published.meta,
            "machine": {
                "cpus": 2,
                "load_avg_1m_start": 11.6,
                "load_avg_1m_end": 12.1,
                "load_per_cpu": 6.05,
                "cpu_steal_pct": 0.0,
            },
            "load_result": {**published.meta["load_result"], "ok": 0, "sent": 320, "aborted": 320},
        },
    )
    said = report.summarise(lab, busy).busy
    assert said is not None and said.startswith("warning: the machine was too busy")
    assert "load average 12.1 on 2 cores" in said
    assert "client aborts 100% of sent, 0% in the lab's published broken run" in said
    quiet = replace(
        busy, meta={**busy.meta, "machine": {**busy.meta["machine"], "load_per_cpu": 0.5}}
    )
    assert "load average" not in (report.summarise(lab, quiet).busy or "")
