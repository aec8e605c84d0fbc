"""Time to a memory limit: how long the measured slope leaves a service to live.

Every case study ends at a limit (fleet-server's pods at ~154 Mi, Railway's 1 GB
container). A slope in MB/min says little until it is set against one: "a 154 MiB pod
is killed in 2.4 [2.1, 2.8] min at this load" does.

The fitted line passes through the steady window's mean point (mean time, mean value):
the projection runs from there at the fitted slope, and is told from the end of the
window: minutes = (limit - mean) / slope - (end - mean time). Its interval comes from
the slope's 95% interval [low, high]: (limit - mean) / high - ... is the earliest time
the data allow, (limit - mean) / low - ... the latest (none, when low <= 0: a service
that may be flat may never reach the limit). Anchoring at the mean point, not at the
line's value at the window's end, keeps the slope's error from counting twice (a steep
fit also puts the end higher); the mean's own error is left out, as it is small beside
the slope's over any window. Measured coverage on synthetic series with a known slope
is in `tests/test_limit.py`.

Past a day the projection says "not within 24 h at this load": no run of a minute
supports a straight line for that long, and a day is beyond any workshop's question.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from leaklab.analysis import Fit, scale
from leaklab.errors import UsageError

HORIZON_MIN = 24 * 60.0  # beyond this the projection says "not within 24 h"

_UNITS = {
    "": 1,
    "k": 1024,
    "ki": 1024,
    "kib": 1024,
    "kb": 1000,
    "m": 1024**2,
    "mi": 1024**2,
    "mib": 1024**2,
    "mb": 1000**2,
    "g": 1024**3,
    "gi": 1024**3,
    "gib": 1024**3,
    "gb": 1000**3,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_size(text: str) -> int:
    """A memory size as container tools write it: 256M, 154Mi and 256MiB are MiB (as
    `docker run -m 256m`); 256MB is 10^6 bytes; a bare number is bytes."""
    match = _SIZE.match(text)
    unit = match[2].lower() if match else ""
    if not match or unit not in _UNITS:
        raise UsageError(
            f"memory limit {text!r} is not a size", "write it as e.g. 256M, 154Mi, 1G or 512MB"
        )
    size = int(float(match[1]) * _UNITS[unit])
    if size <= 0:
        raise UsageError(f"memory limit {text!r} is zero", "give a size above zero, e.g. 256M")
    return size


def describe_size(size: float) -> str:
    """Bytes as the nearest binary unit: 161480704 -> '154 MiB'."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor:
            return f"{size / factor:.3g} {unit}"
    return f"{size:.0f} B"


@dataclass(frozen=True)
class TimeToLimit:
    """One series' projection to the limit. Minutes count from `from_s` (seconds since
    load start: the end of the steady window); None where the data allow no time within
    24 h (for `minutes_high`: the slope may be zero or falling, so possibly never)."""

    series: str
    limit_bytes: int
    limit_label: str
    minutes: float | None
    minutes_low: float | None
    minutes_high: float | None
    text: str
    from_s: float
    level_bytes: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def project(
    series: str,
    fit: Fit | None,
    anchor: tuple[float, float],
    from_s: float,
    limit_bytes: int,
    limit_label: str,
) -> TimeToLimit:
    """The time from `from_s` until `limit_bytes` at `fit`'s slope (display units per
    minute, as `leaklab.analysis` fits a bytes series), the line passing through
    `anchor` (seconds, bytes): the window's mean point (`anchor_of`)."""
    per = scale(series)[0]
    anchor_s, anchor_bytes = anchor
    lead = (from_s - anchor_s) / 60.0  # minutes of the projection already behind us
    level_bytes = anchor_bytes + (fit.slope * per * lead if fit is not None else 0.0)
    remaining = (limit_bytes - anchor_bytes) / per  # from the anchor, in the fit's units
    who = series_label(series)

    def result(times: tuple[float | None, ...], text: str) -> TimeToLimit:
        minutes, low, high = (_round(m) for m in times)
        return TimeToLimit(
            series, limit_bytes, limit_label, minutes, low, high, text,
            round(from_s, 3), round(level_bytes, 1),
        )  # fmt: skip

    if fit is None:
        return result((None, None, None), f"{who}: too few samples for a slope")
    if level_bytes >= limit_bytes:
        return result((0.0, 0.0, 0.0), f"{who} is at or above {limit_label} already")
    central = _minutes(remaining, fit.slope, lead)
    low = _minutes(remaining, fit.high, lead)  # the steepest slope reaches it first
    high = _minutes(remaining, fit.low, lead)
    if low is None:
        text = f"{who} reaches {limit_label}: not within 24 h at this load"
        return result((None, None, None), text)
    if central is None:
        text = (
            f"{who} reaches {limit_label} in {_fmt(low)} at the earliest; "
            "not within 24 h at the measured slope"
        )
    else:
        text = f"{who} reaches {limit_label} in {_fmt(central)} [{_fmt(low)}, {_fmt(high)}]"
        text += " at this load"
    return result((central, low, high), text)


def series_label(series: str) -> str:
    return "RSS" if series == "rss_bytes" else series.removesuffix("_bytes").replace("_", " ")


def anchor_of(t_s: np.ndarray, values: np.ndarray) -> tuple[float, float]:
    """The window's mean point (seconds, bytes): the fitted line passes through it."""
    if len(values) == 0:
        return math.nan, math.nan
    return float(np.mean(t_s)), float(np.mean(values))


def _minutes(remaining: float, slope: float, lead: float) -> float | None:
    if slope <= 0:
        return None
    minutes = max(remaining / slope - lead, 0.0)
    return minutes if minutes <= HORIZON_MIN else None


def _round(minutes: float | None) -> float | None:
    return None if minutes is None else round(minutes, 3)


def _fmt(minutes: float | None) -> str:
    if minutes is None:
        return "not within 24 h"  # the slope's interval reaches zero: possibly never
    if minutes < 1:
        return f"{minutes * 60:.0f} s"
    if minutes < 120:
        return f"{minutes:.2g} min" if minutes < 10 else f"{minutes:.0f} min"
    return f"{minutes / 60:.1f} h"
