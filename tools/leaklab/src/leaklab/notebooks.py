"""`leaklab notebooks`: execute every course notebook top to bottom.

Used by CI (into a scratch copy: the committed notebook must run on the committed
datasets) and by maintainers (`--in-place`, to refresh the outputs GitHub renders).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from leaklab.paths import repo_root

KERNEL = "leaklab"  # scripts/setup registers the project's .venv under this name


def execute(path: Path, in_place: bool, timeout_s: int = 600, cwd: Path | None = None) -> Path:
    """Run a notebook on the project's kernel; return where the executed copy went.

    `cwd` is the folder the kernel starts in (default: the notebook's own, as JupyterLab
    does; VS Code in a Codespace starts it at the repository root). A notebook must not
    depend on it: CI runs each from both."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=timeout_s,
        kernel_name=KERNEL,
        resources={"metadata": {"path": str(cwd or path.parent)}},
    )
    client.execute()
    target = path if in_place else repo_root() / ".leaklab" / "notebooks" / path.name
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    return target
