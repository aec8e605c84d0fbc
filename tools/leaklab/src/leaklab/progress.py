"""The load's and the series' latest figures, in one line, for the live view (`leaklab.live`)."""

from __future__ import annotations

from typing import Any

from leaklab.analysis import scale
from leaklab.samplers import Recorder

LOAD_COUNTERS = ("sent", "ok", "acked", "aborted", "errors")


def figures(recorder: Recorder, series: tuple[str, ...], load: dict[str, Any]) -> str:
    """`sent 1200  ok 900  go_heap_live 45 MB ...`: the counters the load program last
    printed, then the latest value of each fitted series."""
    parts = [f"{k} {int(load[k])}" for k in LOAD_COUNTERS if k in load]
    for name in series:
        if name in recorder.latest:
            factor, unit = scale(name)
            value = recorder.latest[name] / factor
            label = name.removesuffix("_bytes")
            parts.append(f"{label} {value:.0f}{(' ' + unit) if unit else ''}")
    return "  ".join(parts)
