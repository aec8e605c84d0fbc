"""From samples to a verdict: steady-state window, slope with a 95% CI, the rule.

The slope is an ordinary least-squares fit of value against time over the steady-state
window (warm-up excluded, load phase only). Memory samples are autocorrelated (a heap
that is high now is high 250 ms later), which makes the textbook OLS interval far too
narrow; the interval here uses Newey-West (HAC) standard errors from statsmodels with a
wide bandwidth (sqrt(n) lags) and Student-t quantiles. In simulation (AR(1) noise,
phi 0.9, 480 samples; tests/test_analysis.py) the naive OLS interval covers the true
slope about 40% of the time, this one about 80%: better, still optimistic, which is why
the verdict needs a margin (`grows_above`, `flat_below`) and the budget a 10x ratio.

Verdict rule, per lab (`[analysis]` in lab.toml), on the verdict series:
- `grows` when the CI's lower bound is above `grows_above` (units per minute);
- `flat` when the CI's upper bound is below `flat_below`;
- `unclear` otherwise (run longer, or look at the plot).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from leaklab.dataset import Dataset

MB = 1_000_000.0


@dataclass(frozen=True)
class Fit:
    """A slope in display units per minute, with its 95% confidence interval."""

    slope: float
    low: float
    high: float
    n: int

    def overlaps(self, other: Fit) -> bool:
        return self.low <= other.high and other.low <= self.high

    def __str__(self) -> str:
        return f"{self.slope:.3g} [{self.low:.3g}, {self.high:.3g}]"


def scale(series: str) -> tuple[float, str]:
    """Display scale and unit: bytes become MB, seconds stay seconds, counts stay counts."""
    if series.endswith("_bytes"):
        return MB, "MB"
    return (1.0, "s") if series.endswith("_s") else (1.0, "")


def unit_per_min(series: str) -> str:
    unit = scale(series)[1]
    return f"{unit}/min" if unit else "/min"


def steady_window(frame: pd.DataFrame, warmup_s: float, load_s: float) -> pd.DataFrame:
    """Samples after the warm-up and before the load ended."""
    return frame[(frame["t_s"] >= warmup_s) & (frame["t_s"] <= load_s)]


def hac_lags(n: int) -> int:
    """sqrt(n): wider than Newey-West's textbook floor(4 (n/100)^(2/9)), which covered
    only ~65% in our simulation of a heap sampled at 4 Hz."""
    return max(1, int(n**0.5))


def fit_slope(t_s: np.ndarray, values: np.ndarray, per: float = 1.0) -> Fit | None:
    """OLS slope of values/per against minutes, with a HAC 95% CI; None if too few points."""
    if len(t_s) < 8 or np.ptp(t_s) <= 0:
        return None
    minutes = np.asarray(t_s, dtype=float) / 60.0
    y = np.asarray(values, dtype=float) / per
    if np.ptp(y) == 0:
        return Fit(0.0, 0.0, 0.0, len(y))
    # Imported here: statsmodels takes seconds to import, and most commands never fit.
    from statsmodels.regression.linear_model import OLS  # type: ignore[import-untyped]
    from statsmodels.tools.tools import add_constant  # type: ignore[import-untyped]

    model = OLS(y, add_constant(minutes))
    result = model.fit(cov_type="HAC", cov_kwds={"maxlags": hac_lags(len(y))}, use_t=True)
    low, high = result.conf_int(alpha=0.05)[1]
    return Fit(float(result.params[1]), float(low), float(high), len(y))


def series_fit(ds: Dataset, series: str, warmup_s: float) -> Fit | None:
    frame = ds.series(series)
    window = steady_window(frame, warmup_s, load_seconds(ds))
    return fit_slope(window["t_s"].to_numpy(), window["value"].to_numpy(), scale(series)[0])


def load_seconds(ds: Dataset) -> float:
    return float(ds.meta.get("phases", {}).get("load_s", math.inf))


def verdict(fit: Fit | None, grows_above: float, flat_below: float) -> str:
    if fit is None:
        return "unclear"
    if fit.low > grows_above:
        return "grows"
    if fit.high < flat_below:
        return "flat"
    return "unclear"


def ratio(broken: Fit, fixed: Fit) -> float:
    """How many times steeper broken is; a flat or falling fixed slope counts as its CI width."""
    floor = max(abs(fixed.slope), (fixed.high - fixed.low) / 2, 1e-9)
    return broken.slope / floor
