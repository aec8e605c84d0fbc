"""Tables and plots for one run or several side by side (`leaklab compare`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from leaklab import limit, sequential
from leaklab.analysis import (
    Fit,
    disturbed,
    fit_slope,
    load_seconds,
    ratio,
    scale,
    series_fit,
    steady_window,
    stretches,
    unit_per_min,
    verdict,
)
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
    # For RSS and the verdict series: the time until the lab's (or the run's) memory
    # limit at the measured slope (`leaklab.limit`), as JSON objects; a grade result
    # carries them unchanged.
    time_to_limit: list[dict[str, Any]] = field(default_factory=list)
    # A run under --memory-limit: the kill predicted from the first half of its window
    # beside the kill observed (or the service alive at the end).
    memory_limit: dict[str, Any] | None = None
    # Why this run's figures may not be trusted: a machine too busy (`machine_busy`).
    busy: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "variant": self.variant,
            "verdict": self.verdict,
            "decided_at_s": self.decided_at_s,
            "fits": {s: (f.__dict__ if f else None) for s, f in self.fits.items()},
            "time_to_limit": self.time_to_limit,
            "memory_limit": self.memory_limit,
            "busy": self.busy,
        }

    def limit_for(self, series: str) -> dict[str, Any] | None:
        return next((t for t in self.time_to_limit if t["series"] == series), None)

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
    latency = f"{figure(p50)} / {figure(p99)}" if timed else None
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
        time_to_limit=[t.to_json() for t in times_to_limit(lab, ds, fits)],
        memory_limit=kill_prediction(lab, ds),
        busy=machine_busy(lab, ds),
    )


# A run's figures are suspect when the machine had this many runnable tasks per core
# (lab 05's broken run answered nothing at a load average near 12 on 2 cores: 6 a core),
# when this share of CPU time was stolen, or when client aborts ran this many times the
# lab's published run of the same variant (and above ABORTS_FLOOR of what was sent).
BUSY_LOAD_PER_CPU = 3.0
BUSY_STEAL_PCT = 10.0
ABORTS_TIMES_NORM = 3.0
ABORTS_FLOOR = 0.05


def machine_busy(lab: Lab, ds: Dataset) -> str | None:
    """One line saying why this run's figures may not be trusted, or None."""
    reasons = []
    machine = ds.meta.get("machine") or {}
    if machine.get("load_per_cpu", 0) >= BUSY_LOAD_PER_CPU:
        load = max(machine["load_avg_1m_start"], machine["load_avg_1m_end"])
        reasons.append(f"load average {load:.1f} on {machine['cpus']} cores")
    if machine.get("cpu_steal_pct", 0) >= BUSY_STEAL_PCT:
        reasons.append(f"{machine['cpu_steal_pct']:.0f}% of CPU time stolen")
    share = _abort_share(ds.meta.get("load_result") or {})
    norm_path = lab.dataset_dir / f"{ds.variant}.json"
    if share is not None and share >= ABORTS_FLOOR and norm_path.is_file():
        from leaklab import dataset

        norm = _abort_share(dataset.read(norm_path).meta.get("load_result") or {})
        if norm is not None and share >= ABORTS_TIMES_NORM * max(norm, 0.01):
            reasons.append(
                f"client aborts {100 * share:.0f}% of sent, {100 * norm:.0f}% in the "
                f"lab's published {ds.variant} run"
            )
    if not reasons:
        return None
    return (
        f"warning: the machine was too busy for these figures to be trusted "
        f"({'; '.join(reasons)}): close what else runs and measure again"
    )


def _abort_share(final: dict[str, Any]) -> float | None:
    sent, aborted = final.get("sent"), final.get("aborted")
    if not isinstance(sent, int | float) or not isinstance(aborted, int | float) or sent <= 0:
        return None
    return float(aborted) / float(sent)


def kill_prediction(lab: Lab, ds: Dataset) -> dict[str, Any] | None:
    """Under --memory-limit: when the limit was predicted to be reached, from the first
    half of the steady window (a prediction the run could have made before the end),
    beside when the OOM killer ended the service, if it did. Predicted twice: from the
    memory the kernel charges to the service's cgroup (what it holds to the limit) and
    from RSS (which counts shared pages once per process, the cgroup once in all)."""
    doc = ds.meta.get("memory_limit")
    if not doc:
        return None
    size, applied, killed = int(doc["bytes"]), bool(doc["applied"]), doc.get("oom_kill_s")
    warmup, end = lab.analysis.warmup_s, load_seconds(ds)
    half = warmup + (end - warmup) / 2
    out: dict[str, Any] = {
        "limit_bytes": size,
        "applied": applied,
        "observed_kill_s": killed,
        "from_window_s": [warmup, round(half, 3)],
    }
    guesses, spans = [], disturbed(ds)
    for key, series in (("predicted", "cgroup_memory_bytes"), ("predicted_from_rss", "rss_bytes")):
        window = steady_window(ds.series(series), warmup, half, spans)
        t, v = window["t_s"].to_numpy(), window["value"].to_numpy()
        if len(t) == 0:
            out[key] = None
            continue
        fit = fit_slope(t, v, scale(series)[0], stretch=stretches(t, spans))
        ttl = limit.project(series, fit, limit.anchor_of(t, v), half, size, "the limit")
        at = [None if m is None else round(half + 60 * m, 1) for m in
              (ttl.minutes, ttl.minutes_low, ttl.minutes_high)]  # fmt: skip
        out[key] = {"series": series, "at_s": at[0], "low_s": at[1], "high_s": at[2]}
        who = "charged memory" if series == "cgroup_memory_bytes" else "RSS"
        if at[0] is not None and at[1] is not None:
            high = "not within 24 h" if at[2] is None else _when(at[2])
            guesses.append(f"{who} predicts {_when(at[0])} [{_when(at[1])}, {high}]")
        else:
            guesses.append(f"{who}: {ttl.text.split(': ', 1)[-1]}")
    if not applied:
        seen = "not applied: this machine gave no writable memory cgroup"
    elif killed is not None:
        seen = f"OOM-killed at {float(killed):.1f} s of load"
    else:
        seen = f"alive at the end of the load ({end:.0f} s)"
    fitted = f"from the window's first {half - warmup:.0f} s"
    out["text"] = (
        f"under a {limit.describe_size(size)} limit: {seen}; {', '.join(guesses)} {fitted}"
    )
    return out


def _when(seconds: float) -> str:
    """Seconds of load as a learner reads them: 59 s, 12 min, 3.5 h."""
    if seconds < 600:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def limit_of(lab: Lab, ds: Dataset) -> tuple[int, str] | None:
    """The limit a run is projected against: the one it ran under (`--memory-limit`),
    else its lab's `[limit]`; None when neither names one."""
    ran_under = ds.meta.get("memory_limit") or {}
    if isinstance(ran_under.get("bytes"), int):
        size = int(ran_under["bytes"])
        return size, f"the run's {limit.describe_size(size)} memory limit"
    if lab.limit is None:
        return None
    return limit.parse_size(lab.limit.size), lab.limit.label


def times_to_limit(lab: Lab, ds: Dataset, fits: dict[str, Fit | None]) -> list[limit.TimeToLimit]:
    """RSS's and the verdict series' projections to the limit (one if they are one)."""
    chosen = limit_of(lab, ds)
    if chosen is None:
        return []
    size, label = chosen
    out = []
    for name in dict.fromkeys(("rss_bytes", lab.analysis.verdict_series)):
        if not name.endswith("_bytes"):
            continue  # a count (goroutines) has no memory limit
        window = steady_window(
            ds.series(name), lab.analysis.warmup_s, load_seconds(ds), disturbed(ds)
        )
        t, v = window["t_s"].to_numpy(), window["value"].to_numpy()
        fit = fits.get(name) if name in fits else series_fit(ds, name, lab.analysis.warmup_s)
        end = float(t[-1]) if len(t) else 0.0
        out.append(limit.project(name, fit, limit.anchor_of(t, v), end, size, label))
    return out


def run_verdict(lab: Lab, decision: sequential.Decision | None, fit: Fit | None) -> str:
    """An adaptive run's verdict is its deciding look's (a wider interval than 95%, over
    the window up to that look); a captured run's is the rule applied to its 95% fit."""
    if decision is not None:
        return decision.verdict
    return verdict(fit, lab.analysis.grows_above, lab.analysis.flat_below)


def figure(value: float) -> str:
    """A figure as a reader reads it: three significant digits below 1,000, a count with
    thousands separators above (3,770, not 3.77e+03)."""
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def table(lab: Lab, summaries: list[RunSummary], wide: bool = False) -> Table:
    """The verdict series' slope with its interval, the verdict and the headline figures,
    narrow enough for an 80-column terminal; `wide` adds every fitted series and count."""
    if wide:
        return _wide_table(lab, summaries)
    name = lab.analysis.verdict_series
    adaptive = any(run.decided_at_s is not None for run in summaries)
    caption = "steady-window slope at 95%"
    if adaptive:
        # The verdict of an adaptive run is its deciding look's: over the window up to
        # that look, at that look's (wider) level; the slope column is the whole
        # window's at 95%. Two intervals for one series, each for its own question.
        caption += "; verdict @Ns: decided by a look after N s of load, at that look's level"
    limits = any(run.time_to_limit for run in summaries)
    if limits:
        caption += "; RSS to limit: at this slope [95% CI], limit below"
    out = Table(title=f"{lab.slug}: {series_title(name)}", caption=caption + "; --wide: more")
    out.add_column("run")
    out.add_column(f"slope\n{unit_per_min(name)} [95% CI]", justify="right")
    out.add_column("verdict")
    out.add_column("peak RSS\nMB", justify="right")
    out.add_column("ok/s", justify="right")
    if limits:
        out.add_column("RSS to\nlimit", justify="right")
    for run in summaries:
        fit = run.fits[name]
        out.add_row(
            run.name,
            str(fit) if fit else "n/a",
            run.verdict_cell,
            f"{run.peak_rss_mb:.0f}",
            f"{run.throughput:.0f}",
            *([limit_cell(run.limit_for("rss_bytes"))] if limits else []),
        )
    return out


def limit_cell(ttl: dict[str, Any] | None) -> str:
    """The time to the limit with its interval, short: '12s [4s, 26s]', '2.2h [35m, >24h]'."""
    if ttl is None or (ttl["minutes_low"] is None and "too few" in ttl["text"]):
        return "n/a"
    if ttl["minutes_low"] is None:
        return ">24h"
    if ttl["minutes_high"] == 0:
        return "reached"  # at or above the limit at the window's end already
    low, high = _short(ttl["minutes_low"]), _short(ttl["minutes_high"])
    if ttl["minutes"] is None:
        return f"≥{low}"
    return f"{_short(ttl['minutes'])} [{low}, {high}]"


def _short(minutes: float | None) -> str:
    if minutes is None:
        return ">24h"
    if minutes < 1:
        return f"{minutes * 60:.0f}s"
    return f"{minutes:.2g}m" if minutes < 100 else f"{minutes / 60:.2g}h"


def limit_lines(summaries: list[RunSummary]) -> list[str]:
    """One line per run and series: the projection to the limit, in words; and for a
    run under --memory-limit, its kill beside the predicted one."""
    lines = []
    for run in summaries:
        lines += [f"{run.name}: {t['text']}" for t in run.time_to_limit]
        if run.memory_limit is not None:
            lines.append(f"{run.name}: {run.memory_limit['text']}")
    return lines


def _wide_table(lab: Lab, summaries: list[RunSummary]) -> Table:
    out = Table(title=f"{lab.slug}: slope over the steady window, 95% CI")
    out.add_column("run")
    for s in lab.analysis.series:
        out.add_column(f"{s}\n{unit_per_min(s)}", justify="right")
    latency = any(run.latency_ms for run in summaries)
    if latency:
        out.add_column("p50 / p99\nms", justify="right")
    limited = [t["series"] for t in summaries[0].time_to_limit] if summaries else []
    for name in ("peak RSS\nMB", "ok/s", "sent", "client\naborts", "errors", "verdict"):
        out.add_column(name, justify="right")
    for series in limited:
        out.add_column(f"{series}\nto limit", justify="right")
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
            *(limit_cell(run.limit_for(series)) for series in limited),
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


def plot(
    lab: Lab,
    runs: list[Dataset],
    path: Path,
    series: tuple[str, ...] | None = None,
    metadata: dict[str, str | None] | None = None,
) -> Path:
    """One panel per series, one line per run, warm-up shaded, load end marked; `metadata`
    goes into the PNG's text chunks (the decks' plots record there what they were drawn from)."""
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
    fig.savefig(path, dpi=110, metadata=metadata)
    plt.close(fig)
    return path
