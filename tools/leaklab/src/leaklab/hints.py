"""The exercise's hint ladder: one hint at a time, from the lab's answer.

The hints live in `solutions/NN-slug/answer.toml` and nowhere a learner reads before the
exercise: a README folds nothing, it tells the learner to run `leaklab hint NN`, so a
hint is read only when asked for. How many hints a learner has seen is kept in
`.leaklab/hints/<lab>` (ignored by git).
"""

from __future__ import annotations

from dataclasses import dataclass

from leaklab.errors import LeakLabError
from leaklab.paths import work_dir
from leaklab.spec import Lab

# What a lab README says so that a learner finds the hints.
README_POINTER = "leaklab hint"


@dataclass(frozen=True)
class Shown:
    number: int
    total: int
    text: str
    next_step: str


def seen(lab: Lab) -> int:
    """How many of the lab's hints this working tree has been shown (0: none)."""
    state = work_dir(lab.root) / "hints" / lab.slug
    try:
        return int(state.read_text())
    except (FileNotFoundError, ValueError):
        return 0


def show(lab: Lab, number: int | None = None) -> Shown:
    """Hint `number` (1-based), or the next one this learner has not seen."""
    total = len(lab.hints)
    if not total:
        raise LeakLabError(f"lab {lab.slug} has no hints")
    already = seen(lab)
    if number is None and already >= total:
        raise LeakLabError(
            f"lab {lab.number} has {total} hints and you have seen them all: "
            f"`leaklab hint {lab.number} K` shows hint K again"
        )
    k = number if number is not None else already + 1
    if not 1 <= k <= total:
        raise LeakLabError(f"lab {lab.number} has hints 1 to {total}; there is no hint {k}")
    state = work_dir(lab.root) / "hints" / lab.slug
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(str(max(already, k)))
    if k < total:
        step = f"stuck still? leaklab hint {lab.number} (hint {k + 1} of {total})"
    else:
        step = (
            "that was the last hint; the diagnosis is below the exercise in "
            f"labs/{lab.slug}/README.md"
        )
    return Shown(k, total, lab.hints[k - 1], step)


def problems(lab: Lab) -> list[str]:
    """A lab with hints has a README that sends the learner to `leaklab hint` and shows
    none of the hints' texts itself."""
    if not lab.hints:
        return []
    readme = lab.lab_dir / "README.md"
    text = " ".join(readme.read_text().split()) if readme.is_file() else ""
    found = []
    if README_POINTER not in text:
        found.append(f"{lab.slug}: the README should tell the learner to run `leaklab hint`")
    shown = [k for k, hint in enumerate(lab.hints, start=1) if " ".join(hint.split()) in text]
    if shown:
        found.append(
            f"{lab.slug}: the README shows hint {', '.join(map(str, shown))} itself; "
            "hints are served only by `leaklab hint` (solutions/*/answer.toml)"
        )
    return found
