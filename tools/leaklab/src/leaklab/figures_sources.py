"""Where a quoted figure comes from: the functions a figures file names (`from = ...`).

Each returns named fields; the figure's `format` (Python's format language, plus
`Nsig` for N significant digits that keeps trailing zeros: 86.0, 0.950) turns them
into the text the prose must quote. An optional `expr` (arithmetic over the fields:
+ - * / ** and round, abs, min, max, median) adds fields computed from them.

- `fit`: a run's slope over the steady window, as `leaklab compare` fits it (the
  harness's `analysis.series_fit`): `slope`, `low`, `high`, `half` (half the interval's
  width), `n`, in MB/min for a byte series. Given `until_s`, the window ends there
  instead: the fit an earlier look would have made, replayed on the committed run.
  Given `look` (k, from 1), the fit the adaptive grade's k-th look makes: its window
  ends at that look's time and its interval is at that look's level (see `looks`).
- `run`: a run's summary (`report.summarise`): `peak_rss_mb`, `throughput`, `verdict`,
  every key of the load program's result (`sent`, `ok`, `aborted`, `p50_ms` ...), the
  run's load parameters as `param_<key>` (durations also as `param_<key>_n`), its phases
  as `phase_<key>` (`phase_load_s`), each series' last sample, unscaled, as
  `last_<series>`, and under `--memory-limit` the kill observed (`oom_kill_s`) and the
  kill predicted (`predicted_at_s`, `_low_s`, `_high_s`; from RSS `predicted_from_rss_*`).
- `series`: a statistic (`median`, `max`, `min`, `first`, `last`) of one series over
  the steady window (or `window = "all"`), in MB for a byte series; also `samples`,
  `steps` (how many times it changed value) and, given `above` (raw units),
  `first_above_s`, when the series first reached it.
- `looks`: the looks an adaptive grade plans for the lab's standard load
  (`sequential.plan`): `count`, `every_s`, and per look k `at_k` (seconds of load),
  `window_k` (seconds of steady window) and `level_k` (its interval's level, in %).
- `ratio`: how many times steeper the first run's slope is than the second's noise
  (`analysis.ratio`, what `compare` prints as "Nx apart").
- `match`: a recorded file (a snapshot, a benchmark's output; `file` from the
  repository root), a regex: its first match's groups as numbers `g1`, `g2` ... (or by
  name), and `count`, the number of matches.
- `json`: a key (dotted path; a number indexes a list) of a recorded JSON file (`file`
  from the repository root): `value`, or an object's keys as fields.
- `records`: a list of records in a recorded JSON file (`file`, `key` its dotted path,
  `where` a table of field = value the records must have): `count`, and for every
  numeric field `mean_<f>`, `median_<f>`, `min_<f>`, `max_<f>`, `sum_<f>` (a process
  table saved by a load: the mean channel process's memory plus binaries).
- `lab`: a key (dotted path) of the lab's `lab.toml`, a constant of the course; a table's
  keys become fields, a duration such as "200ms" also as its number (`backend_latency_n`).
- `combine`: arithmetic across sources (two runs, a run and `lab.toml`): `parts`, a table
  of named sources (any kind but `combine`, each with its own `expr`), whose fields come
  prefixed by the part's name (`parts = { s = { from = "fit", ... } }` gives `s_slope`).

`expr` is one expression (giving `value`) or a table of them (each giving its name).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import operator
import re
import statistics
import string
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from leaklab import analysis, dataset, report
from leaklab.errors import LeakLabError
from leaklab.spec import Lab, load_lab

if TYPE_CHECKING:
    from leaklab.sequential import Look

STATS: dict[str, Callable[[Any], float]] = {
    "median": lambda v: float(v.median()),
    "max": lambda v: float(v.max()),
    "min": lambda v: float(v.min()),
    "first": lambda v: float(v.iloc[0]),
    "last": lambda v: float(v.iloc[-1]),
}


class Sources:
    """The sources of one figures file: its lab's datasets and lab.toml (or, for the
    course's file, only recorded files and no lab)."""

    def __init__(self, root: Path, slug: str | None) -> None:
        self.root = root
        self.slug = slug
        self._spec: Lab | None = None
        self._runs: dict[str, dataset.Dataset] = {}

    @property
    def lab(self) -> Lab:
        if self.slug is None:
            raise LeakLabError("the course's figures file has no lab: use match or json")
        if self._spec is None:
            self._spec = load_lab(self.slug, self.root)
        return self._spec

    def run(self, name: str) -> dataset.Dataset:
        if name not in self._runs:
            path = self.root / "datasets" / str(self.slug) / f"{name}.json"
            if not path.is_file():
                raise LeakLabError(f"no run {name!r} ({path.relative_to(self.root)})")
            self._runs[name] = dataset.read(path)
        return self._runs[name]

    def compute(self, source: dict[str, Any]) -> dict[str, Any]:
        kind = source["from"]
        handler = getattr(self, f"_{kind}", None)
        if handler is None:
            raise LeakLabError(f"unknown source {kind!r}")
        try:
            fields: dict[str, Any] = handler(source)
        except KeyError as err:
            raise LeakLabError(f"source {kind!r} needs {err}") from err
        exprs = source.get("expr", {})
        for name, expr in ({"value": exprs} if isinstance(exprs, str) else exprs).items():
            fields[name] = evaluate(expr, fields)
        return fields

    def _fit_of(
        self, run: str, series: str, until_s: float | None = None, level: float = 0.95
    ) -> analysis.Fit:
        ds = self.run(run)
        if until_s is not None:
            # The run as it stood at until_s: its samples up to then, and its load
            # "ended" there, so that the steady window closes at until_s.
            phases = {**ds.meta.get("phases", {})}
            phases["load_s"] = min(analysis.load_seconds(ds), until_s)
            ds = dataclasses.replace(
                ds, frame=ds.frame[ds.frame["t_s"] <= until_s], meta={**ds.meta, "phases": phases}
            )
        fit = analysis.series_fit(ds, series, self.lab.analysis.warmup_s, level)
        if fit is None:
            raise LeakLabError(f"too few samples to fit {series}")
        return fit

    def _fit(self, source: dict[str, Any]) -> dict[str, Any]:
        until = source.get("until_s")
        level = 0.95
        if "look" in source:
            # A grade's look is narrower in time and wider in confidence than the
            # 95% fit: the prose that quotes "decided at the first look" quotes this.
            look = self._plan()[int(source["look"]) - 1]
            until, level = look.at_s, look.level
        fit = self._fit_of(
            source["run"], source["series"], None if until is None else float(until), level
        )
        return {**fit.__dict__, "half": (fit.high - fit.low) / 2}

    def _run(self, source: dict[str, Any]) -> dict[str, Any]:
        ds = self.run(source["run"])
        summary = report.summarise(self.lab, ds)
        # Each series' last sample, unscaled (`last_backend_docs`), so that a figure may
        # set the service's own counts beside the load's.
        last = ds.frame.groupby("series", sort=False)["value"].last()
        # Under --memory-limit: the kill observed, and the kill predicted from the first
        # half of the window (from the charged memory, `predicted_*`, and from RSS).
        limited: dict[str, Any] = {}
        if summary.memory_limit:
            doc = summary.memory_limit
            limited["oom_kill_s"] = doc.get("observed_kill_s")
            for key in ("predicted", "predicted_from_rss"):
                guess = doc.get(key) or {}
                for field in ("at_s", "low_s", "high_s"):
                    limited[f"{key}_{field}"] = guess.get(field)
        return {
            **limited,
            **{f"last_{name}": float(v) for name, v in last.items()},
            **{f"param_{k}": v for k, v in _with_durations(ds.meta.get("load_params", {})).items()},
            **{f"phase_{k}": v for k, v in ds.meta.get("phases", {}).items()},
            **ds.meta.get("load_result", {}),
            "peak_rss_mb": summary.peak_rss_mb,
            "throughput": summary.throughput,
            "verdict": summary.verdict,
        }

    def _series(self, source: dict[str, Any]) -> dict[str, Any]:
        ds, name = self.run(source["run"]), source["series"]
        frame = ds.series(name)
        if source.get("window", "steady") == "steady":
            frame = analysis.steady_window(
                frame,
                self.lab.analysis.warmup_s,
                analysis.load_seconds(ds),
                analysis.disturbed(ds),
            )
        if frame.empty:
            raise LeakLabError(f"no samples of {name} in {source['run']}")
        values = frame["value"] / analysis.scale(name)[0]
        out: dict[str, Any] = {k: f(values) for k, f in STATS.items()}
        out["samples"] = len(values)
        out["steps"] = int((values.diff().fillna(0) != 0).sum())
        if "above" in source:
            # When the series first reached a size (in its raw unit: bytes).
            over = frame[frame["value"] >= float(source["above"])]
            out["first_above_s"] = float(over["t_s"].iloc[0]) if len(over) else None
        return out

    def _plan(self) -> list[Look]:
        from leaklab import sequential

        a = self.lab.analysis
        duration = float(self.lab.load.params["duration"])
        return list(sequential.plan(a.warmup_s, duration, a.look_every_s))

    def _looks(self, source: dict[str, Any]) -> dict[str, Any]:
        a = self.lab.analysis
        looks = self._plan()
        out: dict[str, Any] = {"count": len(looks), "every_s": a.look_every_s}
        for k, look in enumerate(looks, start=1):
            out[f"at_{k}"] = look.at_s
            out[f"window_{k}"] = look.at_s - a.warmup_s
            out[f"level_{k}"] = 100 * look.level
        return out

    def _ratio(self, source: dict[str, Any]) -> dict[str, Any]:
        first, second = (self._fit_of(r, source["series"]) for r in source["runs"])
        return {"value": analysis.ratio(first, second)}

    def _combine(self, source: dict[str, Any]) -> dict[str, Any]:
        # One source per part, so that a figure such as memory per waiter (a storm's
        # median less the standard load's, over a count) is recomputed like any other.
        out: dict[str, Any] = {}
        for prefix, part in source["parts"].items():
            if part.get("from") == "combine":
                raise LeakLabError(f"part {prefix!r} of a combine may not be a combine")
            out.update({f"{prefix}_{k}": v for k, v in self.compute(part).items()})
        return out

    def _file(self, name: str) -> Path:
        path = self.root / name
        if not path.is_file():
            raise LeakLabError(f"no file {name}")
        return path

    def _match(self, source: dict[str, Any]) -> dict[str, Any]:
        text = self._file(source["file"]).read_text()
        found = list(re.finditer(source["pattern"], text, re.M))
        if not found:
            raise LeakLabError(f"{source['pattern']!r} matches nothing in {source['file']}")
        first = found[0]
        out: dict[str, Any] = {"count": len(found)}
        out.update({f"g{i}": _number(g) for i, g in enumerate(first.groups(), start=1)})
        out.update({k: _number(v) for k, v in first.groupdict().items()})
        return out

    def _json(self, source: dict[str, Any]) -> dict[str, Any]:
        doc = json.loads(self._file(source["file"]).read_text())
        value = _dig(doc, source["key"])
        # An object's keys become fields, so one window gives its p50 and p99 together.
        return dict(value) if isinstance(value, dict) else {"value": value}

    def _records(self, source: dict[str, Any]) -> dict[str, Any]:
        doc = json.loads(self._file(source["file"]).read_text())
        rows = _dig(doc, source["key"])
        if not isinstance(rows, list):
            raise LeakLabError(f"{source['key']!r} of {source['file']} is not a list")
        where = source.get("where", {})
        picked = [
            r for r in rows if isinstance(r, dict) and all(r.get(k) == v for k, v in where.items())
        ]
        if not picked:
            raise LeakLabError(f"no record of {source['file']} has {where}")
        out: dict[str, Any] = {"count": len(picked)}
        for name in picked[0]:
            values = [r.get(name) for r in picked]
            # Only the fields every picked record holds as a number (bool is not one).
            nums = [
                float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)
            ]
            if len(nums) == len(values):
                out[f"mean_{name}"] = statistics.fmean(nums)
                out[f"median_{name}"] = statistics.median(nums)
                out[f"min_{name}"], out[f"max_{name}"] = min(nums), max(nums)
                out[f"sum_{name}"] = math.fsum(nums)
        return out

    def _lab(self, source: dict[str, Any]) -> dict[str, Any]:
        doc = tomllib.loads((self.root / "labs" / str(self.slug) / "lab.toml").read_text())
        value = _dig(doc, source["key"])
        if not isinstance(value, dict):
            return {"value": value}
        # A table's keys become fields; a duration ("200ms", "2s") also as its number,
        # `<key>_n`, so that the prose may write "200 ms".
        return _with_durations(value)


def _with_durations(params: dict[str, Any]) -> dict[str, Any]:
    """Parameters as numbers where they are numbers ("150" is 150), and each duration
    ("200ms", "10s") also as its number, `<key>_n`, so that the prose may write "200 ms"."""
    out = {k: _number(v) if isinstance(v, str) else v for k, v in params.items()}
    for key, item in params.items():
        duration = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", str(item))
        if duration:
            out[f"{key}_n"] = _number(duration.group(1))
    return out


def _dig(doc: Any, key: str) -> Any:
    for part in key.split("."):
        # A number indexes a list (`windows.1.p50_ms`: a recorded run's second window),
        # because measure.py's datasets keep their windows and results as lists.
        if isinstance(doc, list) and re.fullmatch(r"-?\d+", part):
            index = int(part)
            if not -len(doc) <= index < len(doc):
                raise LeakLabError(f"no key {key!r}")
            doc = doc[index]
        elif isinstance(doc, dict) and part in doc:
            doc = doc[part]
        else:
            raise LeakLabError(f"no key {key!r}")
    return doc


def _number(text: str | None) -> Any:
    if text is None:
        return None
    plain = text.replace(",", "")
    try:
        return int(plain)
    except ValueError:
        try:
            return float(plain)
        except ValueError:
            return text


_OPS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
}
# median: a figure quoted from repeated runs (one dataset each) is their median.
_CALLS: dict[str, Callable[..., Any]] = {
    "round": round,
    "abs": abs,
    "min": min,
    "max": max,
    "median": lambda *values: statistics.median(values),
}


def evaluate(expr: str, fields: dict[str, Any]) -> Any:
    """Arithmetic over the fields, nothing else (no attribute, no import, no call but
    round, abs, min, max and median): a figures file is data, not code."""

    def walk(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.Name) and node.id in fields:
            return fields[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.operand))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _CALLS
            and not node.keywords
        ):
            return _CALLS[node.func.id](*(walk(a) for a in node.args))
        raise LeakLabError(f"expr {expr!r}: {ast.unparse(node)!r} is not allowed here")

    try:
        return walk(ast.parse(expr, mode="eval"))
    except SyntaxError as err:
        raise LeakLabError(f"expr {expr!r}: {err.msg}") from err


class _Formatter(string.Formatter):
    """Python's format language, plus `Nsig`: N significant digits, trailing zeros kept
    and no trailing point (86.0, 115, 0.950, -0.0447)."""

    def format_field(self, value: Any, format_spec: str) -> str:
        sig = re.fullmatch(r"(,?)(\d+)sig", format_spec)
        if sig and isinstance(value, int | float):
            return significant(float(value), int(sig.group(2)), bool(sig.group(1)))
        return str(super().format_field(value, format_spec))


def significant(value: float, digits: int, grouping: bool = False) -> str:
    if value == 0 or not math.isfinite(value):
        return f"{value:.{max(digits - 1, 0)}f}" if value == 0 else str(value)
    exponent = math.floor(math.log10(abs(value)))
    decimals = max(digits - 1 - exponent, 0)
    rounded = round(value, decimals)
    if rounded != 0 and math.floor(math.log10(abs(rounded))) > exponent:
        decimals = max(decimals - 1, 0)  # 99.96 at 3 digits is 100, not 100.0
    return f"{value:{',' if grouping else ''}.{decimals}f}"


def render(fmt: str, fields: dict[str, Any]) -> str:
    try:
        return _Formatter().format(fmt, **fields)
    except (KeyError, IndexError) as err:
        raise LeakLabError(f"format {fmt!r} names {err}, fields: {', '.join(fields)}") from err
    except ValueError as err:
        raise LeakLabError(f"format {fmt!r}: {err}") from err
