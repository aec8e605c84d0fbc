"""Time to a memory limit (`leaklab.limit`): sizes, the projection, its coverage."""

from __future__ import annotations

import numpy as np
import pytest
from test_analysis import HIGH, LOW, RUNS, SLOPE, Series, autocorrelated, sawtooth, step

from leaklab.analysis import Fit, fit_slope
from leaklab.errors import LeakLabError
from leaklab.limit import anchor_of, parse_size, project

MB = 1e6
# The limit sits this far (in MB) above the true line's value at the window's end: at
# SLOPE (30 MB/min) the true time to it is 10 minutes.
DISTANCE_MB = 300.0


def covers_true_time(series: Series) -> float:
    """How often the projection's interval holds the true time to the limit."""
    covered = 0
    for seed in range(RUNS):
        t, mb = series(np.random.default_rng(seed))
        values = mb * MB
        fit = fit_slope(t, values, MB)
        assert fit is not None
        end = float(t[-1])
        limit = int((SLOPE * end / 60 + DISTANCE_MB) * MB)
        ttl = project("heap_bytes", fit, anchor_of(t, values), end, limit, "a limit")
        truth = DISTANCE_MB / SLOPE
        assert ttl.minutes_low is not None
        covered += ttl.minutes_low <= truth <= (ttl.minutes_high or np.inf)
    return covered / RUNS


@pytest.mark.parametrize("series", [step, sawtooth, autocorrelated], ids=lambda s: s.__name__)
def test_the_interval_covers_the_true_time_to_the_limit(series: Series) -> None:
    # Measured (400 seeded runs each): step 0.9425, sawtooth 0.9575, AR(1) 0.9275. With
    # the line's value at the window's end as the start (the slope's error counted
    # twice), AR(1) fell to 0.91.
    assert LOW <= covers_true_time(series) <= HIGH


def test_sizes_as_container_tools_write_them() -> None:
    assert parse_size("256M") == parse_size("256Mi") == parse_size("256MiB") == 256 * 2**20
    assert parse_size("1G") == 2**30
    assert parse_size("512MB") == 512_000_000
    assert parse_size("4096") == 4096
    for bad in ("lots", "256 furlongs", "-1M", "0", ""):
        with pytest.raises(LeakLabError, match="memory limit"):
            parse_size(bad)


def test_a_slope_that_may_be_zero_gives_no_latest_time_and_a_flat_one_none() -> None:
    maybe = project("rss_bytes", Fit(1.0, -1.0, 3.0, 50), (60.0, 20 * MB), 60.0, int(120 * MB), "L")
    assert maybe.minutes == 100.0 and maybe.minutes_low == pytest.approx(33.333, abs=1e-3)
    assert maybe.minutes_high is None
    assert "[33 min, not within 24 h]" in maybe.text
    flat = project(
        "rss_bytes", Fit(0.001, -0.01, 0.05, 50), (60.0, 20 * MB), 60.0, int(120 * MB), "L"
    )
    assert flat.minutes is None and flat.minutes_low is None
    assert flat.text == "RSS reaches L: not within 24 h at this load"
    over = project("rss_bytes", Fit(5.0, 4.0, 6.0, 50), (60.0, 130 * MB), 60.0, int(120 * MB), "L")
    assert over.minutes == 0.0 and "already" in over.text
    from leaklab.report import limit_cell

    assert limit_cell(over.to_json()) == "reached"
    assert limit_cell(maybe.to_json()) == "1.7h [33m, >24h]"
    assert limit_cell(flat.to_json()) == ">24h"


def test_every_labs_summary_carries_time_to_limit_for_rss_and_the_verdict_series() -> None:
    from leaklab import dataset, report
    from leaklab.spec import lab_slugs, load_lab

    keys = {"series", "limit_bytes", "limit_label", "minutes", "minutes_low", "minutes_high"}
    for slug in lab_slugs():
        lab = load_lab(slug)
        assert lab.limit is not None, f"{slug}: lab.toml has no [limit]"
        broken = report.summarise(lab, dataset.read(lab.dataset_dir / "broken.json"))
        series = [t["series"] for t in broken.time_to_limit]
        assert series == list(dict.fromkeys(["rss_bytes", lab.analysis.verdict_series]))
        for ttl in broken.time_to_limit:
            assert keys | {"text"} <= set(ttl) and ttl["limit_bytes"] == parse_size(lab.limit.size)
            assert ttl["text"].startswith(("RSS", ttl["series"].split("_")[0]))
            assert (
                report.summarise(lab, dataset.read(lab.dataset_dir / "broken.json")).to_json()[
                    "time_to_limit"
                ]
                == broken.time_to_limit
            )
