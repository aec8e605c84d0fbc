"""`leaklab status`: where a learner is in each lab, from what this clone has recorded.

Every lab is in one of five states, judged for the tree as it is now (a check or grade
of an earlier version of the code does not count for the current one):

- not started: the editable folders are as published and nothing was run;
- changed: the editable folders differ from the published ones (or a check failed);
- checked: `leaklab check` passed on this exact tree;
- measured: this tree was measured (`leaklab run --variant mine`, or a grade that failed);
- passed: `leaklab grade` passed on this exact tree.

A check and a grade record their outcome with a digest of the editable folders in
`.leaklab/status/<lab>.json` (ignored by git), so no state is guessed from timestamps
except a `leaklab run` of mine, which records nothing of its own: it counts when its
dataset is newer than the last edit.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leaklab import base
from leaklab.errors import LeakLabError
from leaklab.paths import work_dir
from leaklab.spec import Lab

STATES = ("not started", "changed", "checked", "measured", "passed")


@dataclass(frozen=True)
class LabStatus:
    slug: str
    state: str  # one of STATES
    detail: str  # what the state rests on, for the learner


def tree_digest(lab: Lab, lab_dir: Path | None = None) -> str:
    """A digest of the editable folders (build outputs left out) of the learner's lab
    folder, or of another copy of it (`lab_dir`, e.g. the published one)."""
    folder = lab_dir or lab.learner_lab_dir
    sha = hashlib.sha256()
    for part in lab.editable:
        for rel in base.walk(folder / part):
            sha.update(f"{part}/{rel.as_posix()}\0".encode())
            sha.update((folder / part / rel).read_bytes())
            sha.update(b"\0")
    return sha.hexdigest()


def _record_path(lab: Lab) -> Path:
    return work_dir(lab.root) / "status" / f"{lab.slug}.json"


def _records(lab: Lab) -> dict[str, Any]:
    path = _record_path(lab)
    try:
        data = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def record(lab: Lab, event: str, passed: bool, tree: str | None = None) -> None:
    """Note that a check or a grade (`event`) passed or failed on a tree."""
    data = _records(lab)
    data[event] = {
        "tree": tree or tree_digest(lab),
        "passed": passed,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path = _record_path(lab)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def has_results(root: Path) -> bool:
    """Whether this clone has run anything: checks, grades, runs or hints."""
    scratch = work_dir(root)
    return any(
        (scratch / name).is_dir() and any((scratch / name).iterdir())
        for name in ("status", "runs", "grades", "hints")
    )


def lab_status(lab: Lab) -> LabStatus:
    """The furthest state the current tree has reached."""
    tree = tree_digest(lab)
    data = _records(lab)
    grade, check = data.get("grade", {}), data.get("check", {})
    if grade.get("tree") == tree:
        if grade.get("passed"):
            return LabStatus(lab.slug, "passed", f"graded {grade.get('at')}")
        return LabStatus(lab.slug, "measured", f"graded {grade.get('at')}: failed")
    if (ran := _measured_since_last_edit(lab)) is not None:
        return LabStatus(lab.slug, "measured", f"leaklab run --variant mine, {ran}")
    if check.get("tree") == tree and check.get("passed"):
        return LabStatus(lab.slug, "checked", f"leaklab check passed {check.get('at')}")
    if tree == _published_digest(lab):  # as published: a failing check is expected
        return LabStatus(lab.slug, "not started", "")
    if check.get("tree") == tree:
        return LabStatus(lab.slug, "changed", f"leaklab check failed {check.get('at')}")
    return LabStatus(lab.slug, "changed", "your edits are not checked yet")


def _published_digest(lab: Lab) -> str | None:
    try:
        course = base.find(lab.root, lab.slug).course()
    except LeakLabError:
        return None
    return tree_digest(lab, course / "labs" / lab.slug)


def _measured_since_last_edit(lab: Lab) -> str | None:
    """When `leaklab run --variant mine` last wrote its dataset, if after the last edit."""
    dataset = work_dir(lab.root) / "runs" / lab.slug / "mine.json"
    if not dataset.is_file():
        return None
    edited = max(
        (
            (lab.learner_lab_dir / part / rel).stat().st_mtime
            for part in lab.editable
            for rel in base.walk(lab.learner_lab_dir / part)
        ),
        default=0.0,
    )
    when = dataset.stat().st_mtime
    if when < edited:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
