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
