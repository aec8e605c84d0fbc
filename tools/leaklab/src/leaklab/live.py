"""The live view of a run: the verdict series and RSS, the slope fitted so far with its
95% band, and the running verdict, redrawn about once a second.

One picture, three places:
- a terminal run (`leaklab run`, `grade`, `demo`): an 80-column chart drawn by plotext,
  redrawn in place by rich; elsewhere (CI, a pipe) a plain line at each look instead;
- a notebook, while a run goes on: `figure(folder)` on the run's log folder, where the
  live view keeps `live.jsonl` (the samples so far) and `live.json` (what the run knows:
  the window, the looks, the verdicts so far);
- a notebook, after the run: `figure(dataset)` on its dataset.

The band is the slope's 95% interval drawn as two lines through the window's mean point
(the fitted line passes through it): where the data say the series may be heading. The
running verdict is the adaptive run's latest look (`leaklab.sequential`): `grows` or
`flat` once a look decides, else "keep measuring" and the time of the next look. A run
without looks (a capture) shows the rule applied to the 95% fit so far, marked so.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np

from leaklab.analysis import Fit, fit_slope, scale, verdict
from leaklab.limit import anchor_of, describe_size
from leaklab.samplers import Recorder
from leaklab.style import series_title

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from leaklab.dataset import Dataset
    from leaklab.sequential import Watch

WIDTH = 80  # columns: the chart fits a standard terminal
CHART_ROWS = 13
RSS_ROWS = 7
REDRAW_S = 1.0
SAMPLES_FILE = "live.jsonl"
STATE_FILE = "live.json"


@dataclass(frozen=True)
class Frame:
    """What a run knows at one moment, enough to draw it anywhere."""

    title: str
    series: str  # the verdict series
    warmup_s: float
    duration_s: float
    grows_above: float
    flat_below: float
    elapsed_s: float
    window_end_s: float | None = None  # the load's end once known; else the elapsed time
    decisions: list[dict[str, Any]] = field(default_factory=list)  # the looks so far
    next_look_s: float | None = None
    adaptive: bool = True
    finished: bool = False  # a dataset's picture: the whole window, not "so far"
    limit_bytes: int | None = None  # a run under --memory-limit: its limit
    killed_s: float | None = None  # ... and when the OOM killer ended the service

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Picture:
    """A frame with its samples and the fit over its steady window so far."""

    frame: Frame
    t: np.ndarray  # verdict series: seconds since load start
    v: np.ndarray  # raw values (bytes for a bytes series)
    rss_t: np.ndarray
    rss_v: np.ndarray
    fit: Fit | None
    anchor: tuple[float, float]
    window: tuple[float, float]

    @property
    def running_verdict(self) -> str:
        """grows / flat once decided; else keep measuring, with the next look's time."""
        f = self.frame
        last = f.decisions[-1] if f.decisions else None
        if last is not None and last["verdict"] != "unclear":
            at = f"look {last['look']} of {last['looks']} at {last['at_s']:.0f} s"
            return f"{last['verdict']} ({at})"
        if f.adaptive and f.next_look_s is not None:
            return f"keep measuring: next look at {f.next_look_s:.0f} s"
        if f.adaptive:
            return "keep measuring" if last is None else f"{last['verdict']} at the last look"
        said = verdict(self.fit, f.grows_above, f.flat_below)
        if f.finished:
            return f"{said} (95%, the whole window)"
        return f"{'keep measuring' if said == 'unclear' else said} (95% so far; no looks)"

    def status(self) -> str:
        f = self.frame
        unit = scale(f.series)[1]
        fit = f"{self.fit} {unit}/min" if self.fit else "too few points yet"
        return (
            f"{f.title}  {min(f.elapsed_s, f.duration_s):.0f}/{f.duration_s:.0f} s  "
            f"slope {fit} (95%)  verdict: {self.running_verdict}"
        )


def picture(
    frame: Frame, t: np.ndarray, v: np.ndarray, rss_t: np.ndarray, rss_v: np.ndarray
) -> Picture:
    end = frame.window_end_s if frame.window_end_s is not None else frame.elapsed_s
    inside = (t >= frame.warmup_s) & (t <= end)
    fit = fit_slope(t[inside], v[inside], scale(frame.series)[0])
    return Picture(
        frame, t, v, rss_t, rss_v, fit, anchor_of(t[inside], v[inside]), (frame.warmup_s, end)
    )


def _band(p: Picture) -> dict[str, tuple[list[float], list[float]]]:
    """The fitted line and the band's two edges over the window, in display units."""
    if p.fit is None:
        return {}
    factor = scale(p.frame.series)[0]
    at_s, at_v = p.anchor
    lo, hi = p.window
    out = {}
    for name, slope in (("fit", p.fit.slope), ("95% low", p.fit.low), ("95% high", p.fit.high)):
        ys = [(at_v + slope * factor * (x - at_s) / 60.0) / factor for x in (lo, hi)]
        out[name] = ([lo, hi], ys)
    return out


def terminal_chart(p: Picture, width: int = WIDTH) -> str:
    """The picture as plotext draws it: the verdict series with its fit and band, and
    RSS below; ANSI colours (rich strips them where colour is off)."""
    import plotext as plt  # type: ignore[import-untyped]  # here: only a terminal draws

    fig = plt.figure
    fig.clear()
    fig.plot_size(width, CHART_ROWS + RSS_ROWS)
    fig.subplots(2, 1)
    top, bottom = fig.subplot(1, 1), fig.subplot(2, 1)
    top.plot_size(width, CHART_ROWS)
    bottom.plot_size(width, RSS_ROWS)
    factor = scale(p.frame.series)[0]
    for panel in (top, bottom):
        panel.theme("simple")
        panel.legend(False)
    band = _band(p)
    if len(p.t):
        # Band first, then the samples, then the fit: each drawn over the one before.
        for name in ("95% low", "95% high"):
            if name in band:
                _trace(top, *band[name], "·")
        _trace(top, p.t, p.v / factor, None)
        if "fit" in band:
            _trace(top, *band["fit"], "•")
        top.line(p.frame.warmup_s, orientation="v", style="dotted")
    key = ": • slope so far, · its 95% band" if band else ""
    top.title(f"{series_title(p.frame.series)}{key}"[:width])
    if len(p.rss_t):
        _trace(bottom, p.rss_t, p.rss_v / 1e6, None)
    bottom.title("RSS (MB)")
    return str(fig.build())


def _trace(panel: Any, xs: Any, ys: Any, marker: str | None) -> None:
    signal = panel.signal([float(x) for x in xs], [float(y) for y in ys], marker=marker)
    signal.lines()
    panel.draw(signal)


def draw(p: Picture, ax: Any = None) -> Figure:
    """The picture with matplotlib (a notebook): the same series, fit, band and verdict."""
    import matplotlib.pyplot as plt

    from leaklab.style import colour

    if ax is None:
        fig, (ax, rss_ax) = plt.subplots(2, 1, figsize=(9, 5.5), sharex=True, height_ratios=[2, 1])
    else:
        fig, rss_ax = ax.figure, None
    factor, unit = scale(p.frame.series)
    ax.plot(p.t, p.v / factor, color="0.35", linewidth=1.2, label=series_title(p.frame.series))
    band = _band(p)
    if band:
        xs, low = band["95% low"]
        _, high = band["95% high"]
        ax.fill_between(
            xs, low, high, color=colour("broken"), alpha=0.2, label="95% band of the slope"
        )
        ax.plot(
            *band["fit"], color=colour("broken"), linewidth=2, label=f"slope {p.fit} {unit}/min"
        )
    ax.axvspan(0, p.frame.warmup_s, color="grey", alpha=0.12, linewidth=0)
    if p.frame.next_look_s is not None:
        ax.axvline(p.frame.next_look_s, color="black", linestyle=":", linewidth=1)
    ax.set_ylabel(unit or "count")
    ax.set_title(f"{p.frame.title}: {p.running_verdict}", fontsize="medium")
    ax.legend(loc="upper left", fontsize="small")
    ax.grid(alpha=0.3)
    if p.frame.killed_s is not None:
        for axis in (ax, rss_ax):
            if axis is not None:
                axis.axvline(p.frame.killed_s, color="black", linewidth=1.5)
        ax.annotate(
            f"OOM kill at {p.frame.killed_s:.0f} s",
            (p.frame.killed_s, 0.05),
            xycoords=("data", "axes fraction"),
            ha="right",
            fontsize="small",
        )
    if rss_ax is not None:
        if p.frame.limit_bytes is not None:
            rss_ax.axhline(p.frame.limit_bytes / 1e6, color=colour("broken"), linestyle="--")
            rss_ax.annotate(
                f"memory limit {describe_size(p.frame.limit_bytes)}",
                (0.01, p.frame.limit_bytes / 1e6),
                xycoords=("axes fraction", "data"),
                va="bottom",
                fontsize="small",
            )
        rss_ax.plot(p.rss_t, p.rss_v / 1e6, color="0.35", linewidth=1.2)
        rss_ax.set_ylabel("RSS, MB")
        rss_ax.set_xlabel("seconds since load start (grey: warm-up)")
        rss_ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def figure(source: Dataset | str | Path, lab: Any = None) -> Figure:
    """A notebook's picture of a finished run (its `Dataset`, or the path of its .json)
    or of a running one (its log folder, where the live view writes `live.json`)."""
    from leaklab import dataset

    if isinstance(source, str | Path) and Path(source).is_dir():
        return draw(read_folder(Path(source)))
    ds = dataset.read(Path(source)) if isinstance(source, str | Path) else source
    return draw(from_dataset(ds, lab))


def from_dataset(ds: Dataset, lab: Any = None) -> Picture:
    """A finished run's picture: its whole steady window, its recorded looks."""
    from leaklab import sequential
    from leaklab.analysis import load_seconds
    from leaklab.spec import load_lab

    lab = lab or load_lab(str(ds.meta["lab"]))
    a = lab.analysis
    doc = ds.meta.get("sequential") or {}
    decision = sequential.recorded(ds.meta)
    load_s = load_seconds(ds)
    frame = Frame(
        title=f"{lab.slug} {ds.name}",
        series=a.verdict_series,
        warmup_s=a.warmup_s,
        duration_s=load_s,
        grows_above=a.grows_above,
        flat_below=a.flat_below,
        elapsed_s=load_s,
        window_end_s=load_s,
        decisions=list(doc.get("decisions", [])),
        adaptive=decision is not None,
        finished=True,
        limit_bytes=(ds.meta.get("memory_limit") or {}).get("bytes"),
        killed_s=(ds.meta.get("memory_limit") or {}).get("oom_kill_s"),
    )
    verdict_frame, rss = ds.series(a.verdict_series), ds.series("rss_bytes")
    return picture(
        frame,
        verdict_frame["t_s"].to_numpy(),
        verdict_frame["value"].to_numpy(),
        rss["t_s"].to_numpy(),
        rss["value"].to_numpy(),
    )


def read_folder(folder: Path) -> Picture:
    """A running run's picture, from what its live view wrote into its log folder."""
    state = json.loads((folder / STATE_FILE).read_text())
    frame = Frame(**state)
    rows: dict[str, list[tuple[float, float]]] = {frame.series: [], "rss_bytes": []}
    with (folder / SAMPLES_FILE).open() as lines:
        for line in lines:
            try:
                t, name, value = json.loads(line)
            except ValueError:
                continue  # the line being written as we read
            if name in rows:
                rows[name].append((t, value))
    (t, v), (rt, rv) = (_columns(rows[frame.series]), _columns(rows["rss_bytes"]))
    return picture(frame, t, v, rt, rv)


def _columns(points: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    if not points:
        return np.empty(0), np.empty(0)
    t, v = zip(*points, strict=True)
    return np.asarray(t, dtype=float), np.asarray(v, dtype=float)


def interactive(stream: Any = None) -> bool:
    """A live chart only on a real terminal: FORCE_COLOR (as an autograder sets it) makes
    rich call a pipe a terminal, and a CI log then fills with redrawn frames."""
    stream = stream or sys.stderr
    try:
        return os.isatty(stream.fileno()) and os.environ.get("TERM") != "dumb"
    except (AttributeError, OSError, ValueError):
        return False


class LiveView:
    """During a run: the chart redrawn about once a second on a terminal, a line per
    look elsewhere; on both, `live.jsonl` and `live.json` in the run's folder."""

    def __init__(
        self,
        frame: Frame,
        recorder: Recorder,
        origin: float,
        folder: Path,
        watch: Watch | None,
        figures: Callable[[], str] = lambda: "",
    ) -> None:
        from rich.console import Console

        self.frame = frame
        self.recorder = recorder
        self.origin = origin
        self.folder = folder
        self.watch = watch
        self.figures = figures
        self.console = Console(stderr=True)
        self.tty = interactive()
        self.live: Any = None
        self.written = 0
        self.last_draw = 0.0
        self.lines_at = _line_times(frame, watch)

    def __enter__(self) -> LiveView:
        if self.tty:
            from rich.live import Live

            self.live = Live(console=self.console, auto_refresh=False, transient=False)
            self.live.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.live is not None:
            if exc_type is None:
                self.update(force=True)
            self.live.stop()

    def logger(self, log: Callable[[str], None]) -> Callable[[str], None]:
        """A run's log lines, printed above the chart while it is drawn: written past it
        by another console, a line was half overwritten by the next frame."""

        def through_live(line: str) -> None:
            if self.live is not None and self.live.is_started:
                self.live.console.print(line, highlight=False, markup=False)
            else:
                log(line)

        return through_live

    def update(self, window_end_s: float | None = None, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last_draw < REDRAW_S:
            return
        self.last_draw = now
        p = self._picture(now - self.origin, window_end_s)
        if self.live is not None:
            from rich.console import Group
            from rich.text import Text

            chart = Text.from_ansi(terminal_chart(p, min(WIDTH, self.console.width)))
            status = Text(f"{p.status()}\n{self.figures()}", overflow="fold")
            self.live.update(Group(chart, status), refresh=True)
        elif self.lines_at and p.frame.elapsed_s >= self.lines_at[0]:
            while self.lines_at and p.frame.elapsed_s >= self.lines_at[0]:
                self.lines_at.pop(0)
            self.console.print(f"{p.status()}  {self.figures()}", highlight=False, markup=False)

    def _picture(self, elapsed_s: float, window_end_s: float | None) -> Picture:
        from dataclasses import replace

        decisions = [d.to_json() for d in self.watch.decisions] if self.watch else []
        frame = replace(
            self.frame,
            elapsed_s=round(elapsed_s, 3),
            window_end_s=window_end_s,
            decisions=decisions,
            next_look_s=_next_look(self.watch),
        )
        rows = self.recorder.snapshot()
        self._save(frame, rows)
        series = {frame.series: [], "rss_bytes": []}  # type: dict[str, list[tuple[float, float]]]
        for at, name, value in rows:
            if name in series:
                series[name].append((at - self.origin, value))
        (t, v), (rt, rv) = _columns(series[frame.series]), _columns(series["rss_bytes"])
        return picture(frame, t, v, rt, rv)

    def _save(self, frame: Frame, rows: list[tuple[float, str, float]]) -> None:
        """Append the new samples; replace the state (a notebook reads both)."""
        wanted = {frame.series, "rss_bytes"}
        with (self.folder / SAMPLES_FILE).open("a") as out:
            for at, name, value in rows[self.written :]:
                if name in wanted:
                    out.write(json.dumps([round(at - self.origin, 3), name, value]) + "\n")
        self.written = len(rows)
        tmp = self.folder / f".{STATE_FILE}.tmp"
        tmp.write_text(json.dumps(frame.to_json()))
        tmp.replace(self.folder / STATE_FILE)


def _next_look(watch: Watch | None) -> float | None:
    if watch is None or watch.finished:
        return None
    return watch.looks[len(watch.decisions)].at_s


def _line_times(frame: Frame, watch: Watch | None) -> list[float]:
    """When a plain (non-terminal) run prints its line: at each planned look, or every
    ten seconds for a run without looks."""
    if watch is not None:
        return [look.at_s for look in watch.looks]
    return [float(t) for t in np.arange(10.0, frame.duration_s + 10.0, 10.0)]
