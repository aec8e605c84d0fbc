"""Datasets: one tidy CSV (`t_s,series,value`) and one provenance JSON per run.

Written atomically: each file goes to a temporary name in the same folder and is
renamed into place, CSV first and JSON last, so a reader that finds the JSON finds a
whole run. An interrupted or failed run leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

COLUMNS = ("t_s", "series", "value")


@dataclass(frozen=True)
class Dataset:
    """A run on disk: its samples as a tidy frame and its provenance."""

    name: str
    frame: pd.DataFrame
    meta: dict[str, Any]

    @property
    def variant(self) -> str:
        return str(self.meta.get("variant", self.name))

    def series(self, name: str) -> pd.DataFrame:
        """One series as a two-column frame (t_s, value), sorted by time."""
        rows = self.frame[self.frame["series"] == name]
        return rows[["t_s", "value"]].sort_values("t_s").reset_index(drop=True)


@contextlib.contextmanager
def _atomic_path(final: Path) -> Iterator[Path]:
    fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        Path(tmp).replace(final)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write(
    folder: Path,
    name: str,
    rows: Iterable[tuple[float, str, float]],
    meta: dict[str, Any],
    artefacts: Path | None = None,
) -> tuple[Path, Path]:
    """Write `<name>.csv` and `<name>.json` (and `<name>/` artefacts) into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = folder / f"{name}.csv", folder / f"{name}.json"
    if artefacts is not None and any(artefacts.iterdir()):
        target = folder / name
        staging = Path(tempfile.mkdtemp(dir=folder, prefix=f".{name}."))
        try:
            shutil.copytree(artefacts, staging, dirs_exist_ok=True)
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    with _atomic_path(csv_path) as tmp, tmp.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(COLUMNS)
        for t_s, series, value in rows:
            out.writerow((f"{t_s:.3f}", series, _number(value)))
    with _atomic_path(json_path) as tmp:
        tmp.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return csv_path, json_path


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def read(json_path: Path) -> Dataset:
    """Read one run from its provenance JSON (the CSV sits beside it)."""
    meta = json.loads(json_path.read_text())
    frame = pd.read_csv(json_path.with_suffix(".csv"))
    return Dataset(json_path.stem, frame, meta)


def read_folder(folder: Path) -> list[Dataset]:
    """Every complete run in a folder, in the order of their `order` field, then name."""
    runs = [read(p) for p in folder.glob("*.json")]
    return sorted(runs, key=lambda d: (d.meta.get("order", 99), d.name))
