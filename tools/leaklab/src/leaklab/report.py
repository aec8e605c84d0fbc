"""Tables and plots for one run or several side by side (`leaklab compare`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from leaklab import sequential
from leaklab.analysis import Fit, load_seconds, ratio, scale, series_fit, unit_per_min, verdict
from leaklab.dataset import Dataset
from leaklab.spec import Lab
from leaklab.style import colour, series_title


@dataclass(frozen=True)
class RunSummary:
    """The figures a learner compares: slopes, peaks, throughput, errors, verdict."""

    name: str
    variant: str
    fits: dict[str, Fit | None]
    peak_rss_mb: float
    throughput: float
    sent: int
    aborted: int
    errors: int
    verdict: str
    # "p50 / p99" in ms, when the load program reports per-request latency (lab 05).
    latency_ms: str | None = None
    # An adaptive run: when its verdict was decided, in seconds of load.
    decided_at_s: float | None = None

    @property
    def verdict_cell(self) -> str:
        return (
            self.verdict
            if self.decided_at_s is None
            else f"{self.verdict} @{self.decided_at_s:.0f}s"
        )


def summarise(lab: Lab, ds: Dataset) -> RunSummary:
    fits = {s: series_fit(ds, s, lab.analysis.warmup_s) for s in lab.analysis.series}
    decision = sequential.recorded(ds.meta)  # None unless the run was adaptive
    final = ds.meta.get("load_result", {})
    load_s = load_seconds(ds)
    # A self-driving program keeps delivering after its load phase (a drain): count its
    # acknowledgements over its whole life, not over the sending window.
    span = float(ds.meta.get("phases", {}).get("exit_s", load_s))
    ok = float(final.get("ok", final.get("acked", 0)))
    rss = ds.series("rss_bytes")["value"]
    p50, p99 = final.get("p50_ms"), final.get("p99_ms")
    timed = isinstance(p50, int | float) and isinstance(p99, int | float)
    latency = f"{_ms(p50)} / {_ms(p99)}" if timed else None
    return RunSummary(
        name=ds.name,
        variant=ds.variant,
        fits=fits,
        peak_rss_mb=float(rss.max()) / 1e6 if len(rss) else float("nan"),
        throughput=ok / span if span > 0 else float("nan"),
        sent=int(final.get("sent", 0)),
        aborted=int(final.get("aborted", 0)),
        errors=int(final.get("errors", 0)),
        verdict=run_verdict(lab, decision, fits[lab.analysis.verdict_series]),
        latency_ms=latency,
        decided_at_s=decision.at_s if decision else None,
    )


def run_verdict(lab: Lab, decision: sequential.Decision | None, fit: Fit | None) -> str:
    """An adaptive run's verdict is its deciding look's (a wider interval than 95%, over
    the window up to that look); a captured run's is the rule applied to its 95% fit."""
    if decision is not None:
        return decision.verdict
    return verdict(fit, lab.analysis.grows_above, lab.analysis.flat_below)


def _ms(value: float) -> str:
    return f"{value:.3g}" if value < 1000 else f"{value:,.0f}"


def table(lab: Lab, summaries: list[RunSummary], wide: bool = False) -> Table:
    """The verdict series' slope with its interval, the verdict and the headline figures,
    narrow enough for an 80-column terminal; `wide` adds every fitted series and count."""
    if wide:
        return _wide_table(lab, summaries)
    name = lab.analysis.verdict_series
    out = Table(
        title=f"{lab.slug}: {series_title(name)}",
        caption="steady-window slope; @Ns: an adaptive run decided after N s of load; "
        "--wide: every series and count",
    )
    out.add_column("run")
    out.add_column(f"slope\n{unit_per_min(name)} [95% CI]", justify="right")
    out.add_column("verdict")
    out.add_column("peak RSS\nMB", justify="right")
    out.add_column("ok/s", justify="right")
    for run in summaries:
        fit = run.fits[name]
        out.add_row(
            run.name,
            str(fit) if fit else "n/a",
            run.verdict,
            f"{run.peak_rss_mb:.0f}",
            f"{run.throughput:.0f}",
        )
    return out


def _wide_table(lab: Lab, summaries: list[RunSummary]) -> Table:
    out = Table(title=f"{lab.slug}: slope over the steady window, 95% CI")
    out.add_column("run")
    for s in lab.analysis.series:
        out.add_column(f"{s}\n{unit_per_min(s)}", justify="right")
    latency = any(run.latency_ms for run in summaries)
    if latency:
        out.add_column("p50 / p99\nms", justify="right")
    for name in ("peak RSS\nMB", "ok/s", "sent", "client\naborts", "errors", "verdict"):
        out.add_column(name, justify="right")
    for run in summaries:
        out.add_row(
            run.name,
            *(str(run.fits[s]) if run.fits[s] else "n/a" for s in lab.analysis.series),
            *([run.latency_ms or "n/a"] if latency else []),
            f"{run.peak_rss_mb:.0f}",
            f"{run.throughput:.0f}",
            str(run.sent),
            str(run.aborted),
            str(run.errors),
            run.verdict_cell,
        )
    return out


def separation(lab: Lab, summaries: list[RunSummary]) -> str | None:
    """The budget check: how far apart the broken and fixed slopes are."""
    by_variant = {s.variant: s for s in summaries}
    broken, fixed = by_variant.get("broken"), by_variant.get("fixed")
    name = lab.analysis.verdict_series
    if not broken or not fixed or not broken.fits[name] or not fixed.fits[name]:
        return None
    b, f = broken.fits[name], fixed.fits[name]
    assert b is not None and f is not None
    apart = "do not overlap" if not b.overlaps(f) else "OVERLAP"
    # The ratio floors a flat fixed slope at its CI half-width (analysis.ratio).
    return (
        f"broken {b.slope:.3g} vs fixed {f.slope:.3g} {unit_per_min(name)}: "
        f"{ratio(b, f):.0f}x apart, CIs {apart}"
    )


def plot(lab: Lab, runs: list[Dataset], path: Path, series: tuple[str, ...] | None = None) -> Path:
    """One panel per series, one line per run, warm-up shaded, load end marked."""
    import matplotlib  # here, not at import: it takes seconds and most commands never plot

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    series = series or lab.analysis.series
    fig, axes = plt.subplots(
        len(series), 1, figsize=(9, 2.8 * len(series)), sharex=True, squeeze=False
    )
    for ax, name in zip(axes[:, 0], series, strict=True):
        factor, unit = scale(name)
        for ds in runs:
            data = ds.series(name)
            ax.plot(
                data["t_s"],
                data["value"] / factor,
                label=ds.name,
                color=colour(ds.variant),
                linewidth=1.4,
            )
        ax.set_title(series_title(name), fontsize="medium")
        ax.set_ylabel(unit or "count")
        ax.axvspan(0, lab.analysis.warmup_s, color="grey", alpha=0.12, linewidth=0)
        ax.grid(alpha=0.3)
    load_s = max((load_seconds(ds) for ds in runs), default=0.0)
    for ax in axes[:, 0]:
        ax.axvline(load_s, color="black", linestyle=":", linewidth=1)
    axes[0, 0].legend(loc="upper left", fontsize="small")
    axes[-1, 0].set_xlabel("seconds since load start (grey: warm-up, dotted: load end)")
    fig.suptitle(f"{lab.slug}: {lab.title}", fontsize="medium")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
