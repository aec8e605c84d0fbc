"""Where things live in the repository, found once from the harness's own location."""

from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path:
    """The repository root: LEAKLAB_ROOT if set, else the nearest parent holding `labs/`."""
    env = os.environ.get("LEAKLAB_ROOT")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "labs").is_dir() and (parent / "tools" / "leaklab").is_dir():
            return parent
    return Path.cwd()


def work_dir(root: Path | None = None) -> Path:
    """The ignored scratch folder: builds, runs and reports. Never committed."""
    return (root or repo_root()) / ".leaklab"
