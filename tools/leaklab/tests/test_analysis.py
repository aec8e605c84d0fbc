from __future__ import annotations

import numpy as np
from scipy import stats

from leaklab.analysis import Fit, fit_slope, ratio, scale, unit_per_min, verdict


def ar1(rng: np.random.Generator, n: int, phi: float, sigma: float) -> np.ndarray:
    out = np.zeros(n)
    for i in range(1, n):
        out[i] = phi * out[i - 1] + rng.normal(0, sigma)
    return out


def test_hac_ci_covers_a_known_slope_under_autocorrelated_noise() -> None:
    # 30 units/min plus AR(1) noise (phi 0.9), like samples of a GC'd heap 250 ms apart.
    t = np.arange(0, 120, 0.25)
    covered = naive_covered = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        y = 30 * t / 60 + ar1(rng, t.size, 0.9, 1.0)
        fit = fit_slope(t, y)
        assert fit is not None
        covered += fit.low < 30 < fit.high
        naive = stats.linregress(t / 60, y)
        half = stats.t.ppf(0.975, t.size - 2) * naive.stderr
        naive_covered += naive.slope - half < 30 < naive.slope + half
    # Nominal 95%; measured ~80% for HAC and ~40% for the naive OLS interval.
    assert covered >= 28
    assert naive_covered < covered


def test_flat_series_is_flat_and_too_few_points_is_none() -> None:
    t = np.arange(0, 60, 0.5)
    fit = fit_slope(t, np.full(t.size, 5.0))
    assert fit == Fit(0.0, 0.0, 0.0, t.size)
    assert fit_slope(np.arange(3.0), np.arange(3.0)) is None


def test_verdict_rule() -> None:
    assert verdict(Fit(50, 40, 60, 100), grows_above=5, flat_below=5) == "grows"
    assert verdict(Fit(0.5, -1, 2, 100), grows_above=5, flat_below=5) == "flat"
    assert verdict(Fit(4, 1, 7, 100), grows_above=5, flat_below=5) == "unclear"
    assert verdict(None, 5, 5) == "unclear"


def test_ratio_floors_a_flat_fixed_slope_at_its_uncertainty() -> None:
    assert ratio(Fit(100, 90, 110, 10), Fit(0.0, -0.5, 0.5, 10)) == 200
    assert ratio(Fit(100, 90, 110, 10), Fit(-2.0, -2.1, -1.9, 10)) == 50


def test_units_follow_the_series_name() -> None:
    assert scale("rss_bytes") == (1_000_000.0, "MB")
    assert scale("rust_queue_age_s") == (1.0, "s")
    assert scale("goroutines") == (1.0, "")
    assert unit_per_min("rss_bytes") == "MB/min" and unit_per_min("goroutines") == "/min"
