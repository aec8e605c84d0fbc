"""Datasets: one tidy CSV (`t_s,series,value`) and one provenance JSON per run.

Written atomically as a pair: both files (and the artefacts) are written to temporary
names in the same folder first; only then is the old JSON removed and the new files
renamed into place, JSON last. A reader finds a run by its JSON, so it sees the old run
whole, no run, or the new run whole, never a new CSV beside an old JSON. An interrupted
or failed write leaves the folder as it was.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from leaklab.variants import UNORDERED

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
    with contextlib.ExitStack() as cleanup:
        csv_tmp = _write_csv(_temp_file(cleanup, csv_path), rows)
        json_tmp = _temp_file(cleanup, json_path)
        json_tmp.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        artefacts_tmp = _stage_artefacts(cleanup, folder, name, artefacts)
        # Everything is on disk. From here the old run stops being a run (no JSON), and
        # the new one becomes one when its JSON lands, last.
        json_path.unlink(missing_ok=True)
        if artefacts is not None:  # a run's: the old run's artefacts go with its files
            shutil.rmtree(folder / name, ignore_errors=True)
        if artefacts_tmp is not None:
            artefacts_tmp.rename(folder / name)
        csv_tmp.replace(csv_path)
        json_tmp.replace(json_path)
    return csv_path, json_path


def _temp_file(cleanup: contextlib.ExitStack, final: Path) -> Path:
    """A temporary file beside `final` (so the rename is atomic), removed unless renamed."""
    fd, name = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp")
    os.close(fd)
    cleanup.callback(Path(name).unlink, missing_ok=True)
    return Path(name)


def _write_csv(path: Path, rows: Iterable[tuple[float, str, float]]) -> Path:
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(COLUMNS)
        for t_s, series, value in rows:
            out.writerow((f"{t_s:.3f}", series, _as_text(value)))
    return path


def _stage_artefacts(
    cleanup: contextlib.ExitStack, folder: Path, name: str, artefacts: Path | None
) -> Path | None:
    """A copy of the run's artefacts beside their final place, or None without any."""
    if artefacts is None or not any(artefacts.iterdir()):
        return None
    staging = Path(tempfile.mkdtemp(dir=folder, prefix=f".{name}."))
    cleanup.callback(shutil.rmtree, staging, ignore_errors=True)
    shutil.copytree(artefacts, staging, dirs_exist_ok=True)
    return staging


# Absolute paths in a run's recorded commands belong to the machine that captured it;
# shown to a learner they are noise. `readable` puts the placeholders back.
_P = r"(?<![^\s,=@:])/[^\s,=@:]*?"  # the start of an absolute path, after a separator
_MACHINE_PATHS = (
    (re.compile(_P + r"/\.leaklab/build/[^/\s]+/[0-9a-f]+/out"), "{build}"),
    (re.compile(_P + r"/\.leaklab/build/[^/\s]+/[0-9a-f]+/src"), "{src}"),
    (re.compile(_P + r"/\.leaklab/runs/[^\s,=@:]+?/logs/[^/\s,=@:]+"), "{run_dir}"),
    (re.compile(_P + r"/\.leaklab/tools"), "{tools}"),
    (re.compile(_P + r"/(labs|datasets)/"), r"\1/"),
)


def readable(command: str) -> str:
    """A recorded command with the capturing machine's paths replaced by placeholders."""
    for pattern, placeholder in _MACHINE_PATHS:
        command = pattern.sub(placeholder, command)
    return command


def _as_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def read(json_path: Path) -> Dataset:
    """Read one run from its provenance JSON (the CSV sits beside it)."""
    meta = json.loads(json_path.read_text())
    frame = pd.read_csv(json_path.with_suffix(".csv"))
    return Dataset(json_path.stem, frame, meta)


def read_folder(folder: Path) -> list[Dataset]:
    """Every complete run in a folder, in the order of their `order` field, then name."""
    runs = [read(p) for p in folder.glob("*.json")]
    return sorted(runs, key=lambda d: (d.meta.get("order", UNORDERED), d.name))
