"""The exercise's hint ladder: one hint at a time, from the lab's manifest.

A self-paced learner asks for the next hint only when stuck; the README shows the same
texts folded, one `<details>` block each, and `leaklab dev check` keeps the two equal.
How many hints a learner has seen is kept in `.leaklab/hints/<lab>` (ignored by git).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from leaklab.errors import LeakLabError
from leaklab.paths import work_dir
from leaklab.spec import Lab

# `<details><summary>Hint 2</summary>` ... `</details>` in a lab README.
README_HINT = re.compile(
    r"<details>\s*<summary>\s*Hint (\d+)\s*</summary>(.*?)</details>", re.S | re.I
)


@dataclass(frozen=True)
class Shown:
    number: int
    total: int
    text: str
    next_step: str


def show(lab: Lab, number: int | None = None) -> Shown:
    """Hint `number` (1-based), or the next one this learner has not seen."""
    total = len(lab.hints)
    if not total:
        raise LeakLabError(f"lab {lab.slug} has no hints yet", f"read labs/{lab.slug}/README.md")
    state = work_dir(lab.root) / "hints" / lab.slug
    seen = int(state.read_text()) if state.is_file() else 0
    k = number if number is not None else min(seen + 1, total)
    if not 1 <= k <= total:
        raise LeakLabError(f"lab {lab.slug} has hints 1 to {total}, not {k}", "")
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(str(max(seen, k)))
    if k < total:
        step = f"stuck still? leaklab hint {lab.number} (hint {k + 1})"
    else:
        step = f"that was the last hint; the diagnosis is folded in labs/{lab.slug}/README.md"
    return Shown(k, total, lab.hints[k - 1], step)


def readme_hints(text: str) -> list[str]:
    """The hints a README shows, in order, as plain text (Markdown left as written)."""
    found = sorted((int(n), body) for n, body in README_HINT.findall(text))
    return [" ".join(body.split()) for _, body in found]


def problems(lab: Lab) -> list[str]:
    """Where the README's hint ladder and the manifest's disagree."""
    readme = lab.lab_dir / "README.md"
    shown = readme_hints(readme.read_text()) if readme.is_file() else []
    wanted = [" ".join(h.split()) for h in lab.hints]
    if shown == wanted:
        return []
    return [
        f"{lab.slug}: the README's hints ({len(shown)}) differ from lab.toml's hints "
        f"({len(wanted)}); show each, word for word, in a <details><summary>Hint K</summary>"
    ]
