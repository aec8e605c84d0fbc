"""No figure without its source (issue 40, item 5): every figure the course's prose quotes
is recomputed from the committed datasets (or lab.toml, or a recorded output) and found
in the files that quote it; every other figure is on its lab's shrink-only list."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from leaklab import analysis, dataset, figures
from leaklab.errors import LeakLabError
from leaklab.figures_sources import Sources, evaluate, render, significant
from leaklab.paths import repo_root

ROOT = repo_root()
LAB = "01-go-bulk-abort"
README = f"labs/{LAB}/README.md"
QUOTE = "96.3 [92.1, 100]"  # broken's live heap slope, as lab 01's README quotes it


def test_every_quoted_figure_is_what_its_source_gives() -> None:
    report = figures.check(ROOT)
    assert report.checked > 0
    assert not report.problems, "\n".join(map(str, report.problems))


def test_lab_01_declares_its_headline_figures() -> None:
    declared = {f.text for ff in figures.figures_files(ROOT) for f in ff.figures}
    headline = (
        QUOTE,
        "-0.05 [-1.37, 1.27]",
        "70.3 [63.5, 77.0]",
        "broken has 313,",
        "305 of them parked",
        "from a leak of about 6.3 MB/min",
    )
    assert set(headline) <= declared


def _course_copy(tmp_path: Path) -> Path:
    """The files the check reads (prose, lab.toml and answers, datasets), not builds."""
    skip = shutil.ignore_patterns("*.png", "node_modules", "target", "_build", "deps", ".leaklab")
    for name in ("labs", "solutions", "datasets", "notebooks", "slides"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=skip)
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    return tmp_path


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_a_stale_figure_names_the_file_the_quote_and_the_value(tmp_path: Path) -> None:
    # A stale quote, declared as quoted: what a README keeps when its dataset is
    # re-captured (or what an author types from memory). Planted in a copy.
    root = _course_copy(tmp_path)
    stale = "86.5 [79.3, 92.7]"
    _replace(root / README, QUOTE, stale)
    _replace(root / "solutions" / LAB / "README.md", QUOTE, stale)
    _replace(root / "datasets" / LAB / figures.FILE_NAME, f'"{QUOTE}"', f'"{stale}"')
    problems = [str(p) for p in figures.check(root).problems]
    expected = f"{README}: quotes {stale!r}, the source gives {QUOTE!r}"
    assert any(p.startswith(expected) for p in problems), problems
    # The command a maintainer runs says the same and fails (exit 1).
    result = subprocess.run(
        [sys.executable, "-m", "leaklab", "dev", "figures", "01"],
        env={**os.environ, "LEAKLAB_ROOT": str(root), "COLUMNS": "400"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert expected in result.stdout


def test_prose_that_drifts_from_its_declaration_fails(tmp_path: Path) -> None:
    # The prose edited, the declaration not: the quote is missing, and the new number
    # has no source.
    root = _course_copy(tmp_path)
    _replace(root / README, QUOTE, "68.0 [79.3, 92.7]")
    problems = [str(p) for p in figures.check(root).problems]
    missing = f"{README}: does not quote {QUOTE!r} (declared in datasets/{LAB}/figures.toml)"
    assert missing in problems
    unsourced = next(p for p in problems if p.startswith(f"{README}: ") and "without a source" in p)
    assert "'68.0'" in unsourced and "'[79.3, 92.7]'" in unsourced


def _tiny_course(tmp_path: Path, prose: str, unsourced: list[str]) -> Path:
    (tmp_path / "labs" / "01-x").mkdir(parents=True)
    (tmp_path / "labs" / "01-x" / "lab.toml").write_text("")
    (tmp_path / "labs" / "01-x" / "README.md").write_text(prose)
    (tmp_path / "datasets" / "01-x").mkdir(parents=True)
    listed = ", ".join(f'"{t}"' for t in unsourced)
    (tmp_path / "datasets" / "01-x" / "figures.toml").write_text(
        f'[unsourced.README]\nreason = "waits"\nfigures = [{listed}]\n'
    )
    return tmp_path


def test_an_unlisted_figure_fails_and_a_listed_one_passes(tmp_path: Path) -> None:
    root = _tiny_course(tmp_path, "It grew 12 MB/min [9.5, 14] over 60 s.\n", ["60 s"])
    problems = [str(p) for p in figures.check(root).problems]
    assert problems == [
        "labs/01-x/README.md: 2 figure(s) without a source: '12 MB/min', '[9.5, 14]' "
        "(declare each in datasets/01-x/figures.toml, or list it under [unsourced] with the reason)"
    ]


def test_the_unsourced_list_only_shrinks(tmp_path: Path) -> None:
    root = _tiny_course(tmp_path, "It ran for 60 s.\n", ["60 s", "12 MB/min"])
    problems = [str(p) for p in figures.check(root).problems]
    assert problems == [
        "labs/01-x/README.md: listed as unsourced in datasets/01-x/figures.toml but no "
        "longer unsourced here, remove: '12 MB/min'"
    ]


def test_the_scanner_reads_prose_and_tables_not_code() -> None:
    text = (
        "Live heap 86.0 MB/min [79.3, 92.7], 290 goroutines, 10% aborts, `-rate 150 s`.\n\n"
        "| run | peak RSS MB | answered |\n| --- | ---: | ---: |\n"
        "| broken | 135 | 5,134 of 9,000 |\n\n"
        "```text\ngc 9 @7.822s 0%: 22->22->13 MB\n```\nlab 01, stage-1, Go 1.27.3\n"
    )
    text = figures.readable(text)
    found = figures.uncovered(text, [])
    assert found == [
        "86.0 MB/min",
        "[79.3, 92.7]",
        "290 goroutines",
        "10%",
        "135",
        "5,134",
        "9,000",
    ]
    assert figures.uncovered(text, ["86.0 MB/min [79.3,\n92.7]", "| 135 |"]) == [
        "290 goroutines",
        "10%",
        "5,134",
        "9,000",
    ]


def test_a_quote_does_not_match_inside_a_longer_number() -> None:
    assert not figures.quote_pattern("6 s").search("it took 16 s")
    assert not figures.quote_pattern("1.2 MB").search("11.25 MB")
    assert figures.quote_pattern("8 steps in\nthe window").search("holds 8 steps in the window")


def test_formats_and_expressions() -> None:
    assert [significant(v, 3) for v in (86.036, 114.8, 0.9482, -0.04474, 99.96)] == [
        "86.0",
        "115",
        "0.948",
        "-0.0447",
        "100",
    ]
    assert render("{a:3sig} [{b:,.0f}]", {"a": 79.327, "b": 16662.0}) == "79.3 [16,662]"
    load = {"impatient": 0.1, "rate": 150, "duration": 60}
    assert evaluate("round(impatient * rate * duration)", load) == 900
    # Repeated runs are quoted by their median (issue 37: five runs per variant).
    assert evaluate("median(a, b, c, d, e)", {"a": 9, "b": 1, "c": 5, "d": 3, "e": 7}) == 5
    with pytest.raises(LeakLabError, match="not allowed"):
        evaluate("rate.__class__", {"rate": 150})
    with pytest.raises(LeakLabError, match="names 'missing'"):
        render("{missing}", {"a": 1})


def test_a_quote_may_not_type_its_own_figures() -> None:
    # A format that writes a number itself would let a quote cover a figure that no
    # source gives: "{slope} MB/min, 3x broken's" covers "3x" without computing it.
    assert figures.typed_figures("{slope:3sig} [{low:3sig}, {high:3sig}] MB/min") == []
    assert figures.typed_figures("against {median:.1f}, goroutines 549 against") == ["549"]
    assert figures.typed_figures("p99 {p99:.1f} s at `flush.go:37`") == []


def test_a_fit_until_a_time_uses_only_the_window_up_to_then() -> None:
    # `until_s` replays an earlier look on a committed run: the steady window closes
    # there, so the fit has only the samples from the warm-up to until_s.
    sources = Sources(ROOT, LAB)
    ds = dataset.read(ROOT / "datasets" / LAB / "broken.json")
    warmup = sources.lab.analysis.warmup_s
    until = warmup + 20.0
    full = sources.compute({"from": "fit", "run": "broken", "series": "go_heap_live_bytes"})
    early = sources.compute(
        {"from": "fit", "run": "broken", "series": "go_heap_live_bytes", "until_s": until}
    )
    series = ds.series("go_heap_live_bytes")
    window = series[(series["t_s"] >= warmup) & (series["t_s"] <= until)]
    by_hand = analysis.fit_slope(
        window["t_s"].to_numpy(),
        window["value"].to_numpy(),
        analysis.scale("go_heap_live_bytes")[0],
    )
    assert by_hand is not None
    assert (early["slope"], early["low"], early["high"]) == (
        by_hand.slope,
        by_hand.low,
        by_hand.high,
    )
    assert early["slope"] != full["slope"]


def test_combine_takes_each_part_under_its_prefix_and_no_nested_combine() -> None:
    # Arithmetic across sources (the detection limit: lab.toml's threshold plus the
    # fixed run's half-interval), on lab 01's committed datasets.
    values = Sources(ROOT, LAB)
    fit = {"from": "fit", "run": "fixed", "series": "go_heap_live_bytes"}
    lab = {"from": "lab", "key": "analysis"}
    both = values.compute(
        {"from": "combine", "parts": {"f": fit, "a": lab}, "expr": {"g": "a_grows_above + f_half"}}
    )
    half, grows_above = values.compute(fit)["half"], values.compute(lab)["grows_above"]
    assert both["f_half"] == half
    assert both["a_grows_above"] == grows_above
    assert both["g"] == pytest.approx(grows_above + half)
    nested = {"from": "combine", "parts": {"f": fit}}
    with pytest.raises(LeakLabError, match="may not be a combine"):
        values.compute({"from": "combine", "parts": {"n": nested}})


def test_a_json_key_indexes_lists_and_an_object_gives_its_keys(tmp_path: Path) -> None:
    # measure.py's datasets keep windows and results as lists: `windows.1.p50_ms`.
    (tmp_path / "rec.json").write_text(
        '{"windows": [{"p50_ms": 1.5}, {"p50_ms": 26.782, "p99_ms": 50.697}]}'
    )
    values = Sources(tmp_path, None)
    one = values.compute({"from": "json", "file": "rec.json", "key": "windows.1.p50_ms"})
    assert one["value"] == 26.782
    last = values.compute({"from": "json", "file": "rec.json", "key": "windows.-1"})
    assert (last["p50_ms"], last["p99_ms"]) == (26.782, 50.697)
    for bad in ("windows.2.p50_ms", "windows.x", "windows.1.p50_ms.0"):
        with pytest.raises(LeakLabError, match="no key"):
            values.compute({"from": "json", "file": "rec.json", "key": bad})


def test_a_fit_at_a_look_uses_its_time_and_its_level() -> None:
    # `look = k` is the fit the adaptive grade's k-th look makes: the window up to that
    # look's time, the interval at that look's level (wider than 95%).
    from leaklab import sequential

    sources = Sources(ROOT, LAB)
    a = sources.lab.analysis
    first = sequential.plan(a.warmup_s, float(sources.lab.load.params["duration"]), a.look_every_s)[
        0
    ]
    at_look = sources.compute(
        {"from": "fit", "run": "broken", "series": "go_heap_live_bytes", "look": 1}
    )
    until = sources.compute(
        {"from": "fit", "run": "broken", "series": "go_heap_live_bytes", "until_s": first.at_s}
    )
    assert first.level > 0.95
    assert at_look["slope"] == until["slope"]
    assert at_look["high"] - at_look["low"] > until["high"] - until["low"]


def test_records_summarise_the_picked_records_of_a_recorded_table() -> None:
    # A process table saved by lab 03's load: the mean channel process (own memory plus
    # the binaries it references), computed by hand beside the source's fields.
    import json

    rel = "datasets/03-elixir-refc-binaries/broken/processes-loaded.json"
    rows = json.loads((ROOT / rel).read_text())["processes"]
    channels = [r for r in rows if r.get("kind") == "channel"]
    sources = Sources(ROOT, "03-elixir-refc-binaries")
    got = sources.compute(
        {"from": "records", "file": rel, "key": "processes", "where": {"kind": "channel"}}
    )
    assert got["count"] == len(channels) < len(rows)
    by_hand = sum(r["memory_bytes"] + r["binary_bytes"] for r in channels) / len(channels)
    assert got["mean_memory_bytes"] + got["mean_binary_bytes"] == pytest.approx(by_hand)
    assert "mean_name" not in got
    with pytest.raises(LeakLabError, match="no record"):
        sources.compute(
            {"from": "records", "file": rel, "key": "processes", "where": {"kind": "nobody"}}
        )
