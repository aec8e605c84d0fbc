"""Adaptive runs: look at the verdict at planned times and stop the load once it is decided.

Most broken services are obvious well before the end of a standard run, and a fixed one
is often clear by the middle. A group-sequential design looks at the verdict every
`look_every_s` seconds of steady window and stops as soon as one look decides; the lab's
duration is the last look. Looking more than once gives noise more chances to produce a
wrong verdict, so each look spends part of the error budget (alpha spending, Lan and
DeMets 1983): with tau the share of the steady window seen so far, the looks together
may spend alpha(tau) = 2 (1 - Phi(z_0.975 / sqrt(tau))), the O'Brien-Fleming-type
function. It spends little early, which is enough for a leak tens of times above the
threshold (lab 01's broken is decided at the first look), and keeps most of the budget
for the last look, where a fixed service near its threshold needs it (a Pocock-type
function, spending evenly, left lab 01's fixed `unclear` at its 99.3% last look). Look
k uses an interval at level 1 - (alpha(tau_k) - alpha(tau_{k-1})), and the verdict rule
of `leaklab.analysis` on it.

By the union bound the chance that any look gives a wrong verdict (`grows` for a service
whose slope is at most `grows_above`, `flat` for one at least `flat_below`) is at most
the sum of the increments, ALPHA, the same as one 95% interval. The bound is
conservative (looks over nested windows are positively correlated, so the true rate is
lower) but it needs no joint distribution of the looks' fits, which for a HAC interval
or a step series has no closed form. `tests/test_sequential.py` measures it on synthetic
series whose true slope is exactly `grows_above` (400 seeded runs each; the budget
one way is 2.5%): a step series is judged `grows` 2.25% of the time, a sawtooth 0.75%,
AR(1) noise with phi 0.9 2.5%. Every look at 95% instead would give 10%, 8.5% and 18%.
Real labs keep margins between their slopes and the thresholds; how often the grader
is actually wrong is measured per lab (`make bench-grader`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from leaklab.analysis import (
    DISTURB_SERIES,
    Fit,
    disturbed_spans,
    fit_slope,
    scale,
    stretches,
    verdict,
)
from leaklab.samplers import Row
from leaklab.spec import Analysis

ALPHA = 0.05  # two-sided, as one 95% interval: at most 2.5% each way
FIRST_LOOKS_AFTER = 2  # the first look after this many look intervals of window


def spent(tau: float, alpha: float = ALPHA) -> float:
    """O'Brien-Fleming-type spending function: the error budget the looks up to tau may
    use. Little early (0.2% at 40% of the window), most at the end (97.9% at the last of
    four looks), so a fixed service is judged nearly as a whole 95% run would judge it."""
    from scipy.stats import norm  # type: ignore[import-untyped]

    tau = min(max(tau, 0.0), 1.0)
    if tau == 0:
        return 0.0
    return float(2 * (1 - norm.cdf(norm.ppf(1 - alpha / 2) / math.sqrt(tau))))


@dataclass(frozen=True)
class Look:
    """A planned look: at `at_s` seconds of load, an interval at `level`."""

    at_s: float
    level: float


def plan(warmup_s: float, duration_s: float, every_s: float) -> list[Look]:
    """Looks every `every_s` seconds of steady window (lab.toml's `look_every_s`, 10 by
    default) from twice that, the last one at the end of the load. A window too short
    for two looks gets one, at 95%.

    Why not earlier: over 10 s (40 samples at 4 Hz) an autocorrelated series holds two
    or three independent values, and the AR(1) fit's interval is far too narrow there
    (a look at 10 s judged a series at the threshold `grows` 16 times in 400, where its
    level allowed 1.3 with the even spending first tried); from 20 s it is close to its
    level."""
    window = duration_s - warmup_s
    first = FIRST_LOOKS_AFTER * every_s
    if window <= first + every_s / 2:
        return [Look(duration_s, 1 - ALPHA)]
    offsets = [*np.arange(first, window - every_s / 2, every_s), window]
    looks, before = [], 0.0
    for offset in offsets:
        now = spent(offset / window)
        looks.append(Look(round(warmup_s + float(offset), 3), 1 - (now - before)))
        before = now
    return looks


@dataclass(frozen=True)
class Decision:
    """What one look saw: its fit at its level, and the verdict that fit gives."""

    look: int  # 1-based
    looks: int
    at_s: float
    level: float
    verdict: str
    fit: Fit | None

    @property
    def decided(self) -> bool:
        return self.verdict != "unclear"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # the fit too: asdict recurses

    def __str__(self) -> str:
        what = self.verdict if self.decided else "not decided"
        return (
            f"look {self.look} of {self.looks} at {self.at_s:.0f} s: {what} "
            f"({self.fit or 'too few points'} at {100 * self.level:.2f}%)"
        )


def judge(
    analysis: Analysis,
    looks: list[Look],
    index: int,
    t_s: np.ndarray,
    values: np.ndarray,
    spans: tuple[tuple[float, float], ...] = (),
) -> Decision:
    """Look `index` (0-based) at the verdict series' samples so far (seconds since load
    start, raw values): the steady window up to the look, fitted at the look's level."""
    look = looks[index]
    inside = (t_s >= analysis.warmup_s) & (t_s <= look.at_s)
    for start, end in spans:  # what the load said disturbs the service
        inside &= (t_s < start) | (t_s > end)
    per = scale(analysis.verdict_series)[0]
    interim = index < len(looks) - 1  # an interim look waits for 3 events of a step series
    t = t_s[inside]
    fit = fit_slope(
        t, values[inside], per, level=look.level, strict_steps=interim, stretch=stretches(t, spans)
    )
    said = verdict(fit, analysis.grows_above, analysis.flat_below)
    return Decision(index + 1, len(looks), look.at_s, look.level, said, fit)


def from_json(doc: dict[str, Any]) -> Decision:
    fit = Fit(**doc["fit"]) if doc.get("fit") else None
    return Decision(doc["look"], doc["looks"], doc["at_s"], doc["level"], doc["verdict"], fit)


class Watch:
    """The looks of one adaptive run, taken from the samples recorded so far."""

    def __init__(self, analysis: Analysis, looks: list[Look]) -> None:
        self.analysis = analysis
        self.looks = looks
        self.decisions: list[Decision] = []

    @property
    def decided(self) -> Decision | None:
        last = self.decisions[-1] if self.decisions else None
        return last if last is not None and last.decided else None

    @property
    def finished(self) -> bool:
        """A look decided, or every look has been taken."""
        return self.decided is not None or len(self.decisions) == len(self.looks)

    def due(self, elapsed_s: float, final_too: bool = False) -> bool:
        """An interim look is due; with `final_too` the last one as well, at its planned
        time (otherwise it is taken when the load has ended, over the whole load)."""
        k = len(self.decisions)
        looks = len(self.looks) if final_too else len(self.looks) - 1
        return self.decided is None and k < looks and elapsed_s >= self.looks[k].at_s

    def look(self, rows: list[Row], t0: float) -> Decision:
        return self._take(len(self.decisions), rows, t0)

    def last_look(self, rows: list[Row], t0: float, end_s: float) -> Decision:
        """The final look, over the whole load phase, when no interim look decided."""
        self.looks[-1] = Look(end_s, self.looks[-1].level)
        return self._take(len(self.looks) - 1, rows, t0)

    def _take(self, index: int, rows: list[Row], t0: float) -> Decision:
        t, v = self._series(rows, t0)
        marks = self._series(rows, t0, DISTURB_SERIES)
        decision = judge(self.analysis, self.looks, index, t, v, disturbed_spans(*marks))
        self.decisions.append(decision)
        return decision

    def to_json(self) -> dict[str, Any]:
        final = self.decisions[-1] if self.decisions else None
        return {
            "verdict": final.verdict if final else "unclear",
            "look": final.look if final else None,
            "looks": [asdict(look) for look in self.looks],
            "decisions": [d.to_json() for d in self.decisions],
        }

    def _series(
        self, rows: list[Row], t0: float, name: str | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        name = name or self.analysis.verdict_series
        points = [(at - t0, value) for at, series, value in rows if series == name]
        t, v = zip(*points, strict=True) if points else ((), ())
        return np.asarray(t, dtype=float), np.asarray(v, dtype=float)


def recorded(meta: dict[str, Any]) -> Decision | None:
    """The deciding (or final) look of an adaptive run's dataset; None for a fixed run."""
    doc = meta.get("sequential")
    if not doc or not doc.get("decisions"):
        return None
    return from_json(doc["decisions"][-1])
