from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from leaklab import dataset


def test_round_trip(tmp_path: Path) -> None:
    rows = [(0.0, "rss_bytes", 1e6), (0.5, "rss_bytes", 2e6), (0.5, "goroutines", 12)]
    dataset.write(tmp_path, "broken", rows, {"variant": "broken", "order": 0})
    ds = dataset.read(tmp_path / "broken.json")
    assert list(ds.frame.columns) == ["t_s", "series", "value"]
    assert ds.series("rss_bytes")["value"].tolist() == [1e6, 2e6]
    assert ds.variant == "broken"


def test_a_failed_write_leaves_nothing(tmp_path: Path) -> None:
    def rows() -> Iterator[tuple[float, str, float]]:
        yield (0.0, "rss_bytes", 1.0)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        dataset.write(tmp_path, "broken", rows(), {"variant": "broken"})
    assert list(tmp_path.iterdir()) == []


def test_folder_reads_only_complete_runs_in_course_order(tmp_path: Path) -> None:
    dataset.write(tmp_path, "fixed", [(0.0, "x", 1.0)], {"order": 2})
    dataset.write(tmp_path, "broken", [(0.0, "x", 1.0)], {"order": 0})
    (tmp_path / "orphan.csv").write_text("t_s,series,value\n")
    assert [d.name for d in dataset.read_folder(tmp_path)] == ["broken", "fixed"]


def write_old_run(folder: Path) -> None:
    artefacts = folder / "old-artefacts"
    artefacts.mkdir()
    (artefacts / "heap.txt").write_text("old")
    dataset.write(folder, "broken", [(0.0, "x", 1.0)], {"run": "old"}, artefacts)


def assert_old_run_or_none(folder: Path) -> None:
    """What a reader sees is the old run whole, or no run: never new data, old JSON."""
    runs = dataset.read_folder(folder)
    assert [(d.meta, d.frame["value"].tolist()) for d in runs] in ([({"run": "old"}, [1.0])], [])
    if runs:
        assert (folder / "broken" / "heap.txt").read_text() == "old"


def test_a_crash_between_the_csv_and_the_json_keeps_the_old_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_old_run(tmp_path)

    def crash(*_args: object, **_kwargs: object) -> str:
        raise OSError("disk full")

    monkeypatch.setattr(dataset.json, "dumps", crash)  # the JSON fails after the CSV
    with pytest.raises(OSError):
        dataset.write(tmp_path, "broken", [(0.0, "x", 2.0)], {"run": "new"})
    assert_old_run_or_none(tmp_path)
    assert dataset.read_folder(tmp_path)  # written before anything was replaced: kept
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "broken",
        "broken.csv",
        "broken.json",
        "old-artefacts",
    ]


def test_a_crash_while_renaming_never_pairs_new_data_with_old_provenance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_old_run(tmp_path)
    new_artefacts = tmp_path / "new-artefacts"
    new_artefacts.mkdir()
    (new_artefacts / "heap.txt").write_text("new")
    real_replace = Path.replace

    def crash_on_json(self: Path, target: Path) -> Path:
        if Path(target).suffix == ".json":
            raise OSError("killed")
        return real_replace(self, target)

    monkeypatch.setattr(Path, "replace", crash_on_json)
    with pytest.raises(OSError):
        dataset.write(tmp_path, "broken", [(0.0, "x", 2.0)], {"run": "new"}, new_artefacts)
    assert_old_run_or_none(tmp_path)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp files
