"""Spoilers: the words of a lab's answer found where a learner reads before the exercise.

A lab's `solutions/NN-slug/answer.toml` lists the words and phrases that give its cause
or fix away. The pre-exercise surfaces are those a learner meets before trying (the
shared conventions, `docs/` aside): the course map in the course README, the lab README
above `<!-- leaklab:answer-below -->` (all of it without the marker), `lab.toml`, every
file in the lab's editable folders (only the comments and doc strings of source code: the
code itself is the bug the learner must find, so its identifiers may name it), the
measuring notebook's cells and outputs, and the deck's slides before
`<!-- leaklab:pause -->` (all of it without the marker). Matching is case-insensitive,
on whole words and phrases; a phrase's spaces match any run of whitespace on one line.

`leaklab dev check` and `tests/test_spoilers.py` both run `find`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pygments.lexers import get_lexer_for_filename
from pygments.token import Comment, String
from pygments.util import ClassNotFound

from leaklab.spec import Lab, lab_slugs

COURSE_MAP = ("<!-- leaklab:course-map -->", "<!-- /leaklab:course-map -->")
COURSE_MAP_NAME = "README.md (course map)"
ANSWER_BELOW = "<!-- leaklab:answer-below -->"
PAUSE = "<!-- leaklab:pause -->"
# Source files whose comments are read, not their code (by extension, lexed by pygments).
SOURCE = {".go", ".rs", ".scala", ".sbt", ".java", ".ex", ".exs", ".erl", ".py", ".sh"}
# Tokens a reader takes as prose: comments, doc strings, Elixir's @moduledoc heredocs.
PROSE = (Comment, String.Doc, String.Heredoc)


@dataclass(frozen=True)
class Hit:
    """One spoiler on one line of a surface."""

    where: str  # `path:line`, or `notebook.ipynb:cell K:line L`
    phrase: str
    line: str

    def __str__(self) -> str:
        return f"{self.where}: {self.phrase!r} in {self.line.strip()[:160]!r}"


@dataclass(frozen=True)
class Surface:
    """Text a learner reads before the exercise: where it is, and its lines."""

    name: str  # relative to the repository root
    lines: tuple[tuple[str, str], ...]  # (location within the file, line)


def pattern(phrases: Iterable[str]) -> re.Pattern[str] | None:
    """One regex matching any phrase as a whole word or phrase, longest first."""
    parts = []
    for phrase in sorted({p.strip() for p in phrases if p.strip()}, key=len, reverse=True):
        words = (re.escape(w) for w in phrase.split())
        parts.append(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)")
    return re.compile("|".join(parts), re.I) if parts else None


def find(lab: Lab, root: Path | None = None) -> list[Hit]:
    """Every spoiler of `lab` on its pre-exercise surfaces under `root` (default: the
    lab's repository), one hit per phrase and line."""
    root = root or lab.root
    regex = pattern(lab.spoilers)
    if regex is None:
        return []
    slugs = _names(lab_slugs(root))
    hits = []
    others = [s for s in lab_slugs(root) if s != lab.slug]
    for surface in surfaces(lab, root):
        for where, line in surface.lines:
            if surface.name == COURSE_MAP_NAME and _about_another(line, lab.slug, others):
                continue
            for found in regex.finditer(slugs.sub(" ", line)):
                hits.append(Hit(f"{surface.name}:{where}", found.group(0), line))
    return hits


def _about_another(line: str, slug: str, others: list[str]) -> bool:
    """A course map line about another lab only (its row): that lab's list applies."""
    return slug not in line and any(other in line for other in others)


def scan_text(text: str, phrases: Iterable[str], slugs: Iterable[str] = ()) -> list[str]:
    """The spoilers in a text (a run's printed output), in order of appearance; the
    lab folder names in `slugs` are blanked first."""
    regex = pattern(phrases)
    return [m.group(0) for m in regex.finditer(_names(slugs).sub(" ", text))] if regex else []


def _names(slugs: Iterable[str]) -> re.Pattern[str]:
    """The labs' folder names, blanked before matching: a slug may keep a word of its
    lab's answer (`02-rust-unbounded-channel`), and a slug is a name, not a sentence."""
    names = sorted(set(slugs), key=len, reverse=True)
    return re.compile("|".join(re.escape(s) for s in names) if names else r"(?!)")


def surfaces(lab: Lab, root: Path) -> Iterator[Surface]:
    """The lab's pre-exercise surfaces under `root` that exist there."""
    slug = lab.slug
    readme = root / "README.md"
    if readme.is_file():
        yield _numbered(COURSE_MAP_NAME, _between(readme.read_text(), *COURSE_MAP))
    lab_readme = root / "labs" / slug / "README.md"
    if lab_readme.is_file():
        yield _numbered(f"labs/{slug}/README.md", _above(lab_readme.read_text(), ANSWER_BELOW))
    toml = root / "labs" / slug / "lab.toml"
    if toml.is_file():
        yield _numbered(f"labs/{slug}/lab.toml", _lines(toml.read_text()))
    for folder in lab.editable:
        base = root / "labs" / slug / folder
        for path in sorted(p for p in base.rglob("*") if p.is_file()) if base.is_dir() else []:
            if text := _read(path):
                name = path.relative_to(root).as_posix()
                yield _numbered(name, _lines(_prose(path, text)))
    notebook = root / "notebooks" / f"{slug}.ipynb"
    if notebook.is_file():
        yield _notebook(notebook, root)
    deck = root / "slides" / f"{slug}.md"
    if deck.is_file():
        yield _numbered(f"slides/{slug}.md", _above(deck.read_text(), PAUSE))


def _lines(text: str) -> list[tuple[int, str]]:
    return list(enumerate(text.splitlines(), start=1))


def _numbered(name: str, lines: list[tuple[int, str]]) -> Surface:
    return Surface(name, tuple((str(n), line) for n, line in lines))


def _between(text: str, start: str, end: str) -> list[tuple[int, str]]:
    """The lines between two marker lines (the whole text when either is missing)."""
    lines = _lines(text)
    first = next((n for n, line in lines if start in line), None)
    last = next((n for n, line in lines if end in line), None)
    if first is None or last is None:
        return lines
    return [(n, line) for n, line in lines if first < n < last]


def _above(text: str, marker: str) -> list[tuple[int, str]]:
    """The lines above a marker line (the whole text when it is missing)."""
    lines = _lines(text)
    at = next((n for n, line in lines if marker in line), None)
    return lines if at is None else [(n, line) for n, line in lines if n < at]


def _read(path: Path) -> str | None:
    """A text file's contents; None for a binary one."""
    try:
        return path.read_text()
    except (UnicodeDecodeError, OSError):
        return None


def _prose(path: Path, text: str) -> str:
    """The file as a reader takes it: source code reduced to its comments and doc
    strings (the code blanked, lines kept where they were), anything else whole."""
    if path.suffix not in SOURCE:
        return text
    try:
        lexer = get_lexer_for_filename(path.name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return text
    kept = []
    for token, value in lexer.get_tokens(text):
        if any(token in kind for kind in PROSE):
            kept.append(value)
        else:
            kept.append(re.sub(r"[^\n]", " ", value))
    return "".join(kept)


def _notebook(path: Path, root: Path) -> Surface:
    """Every cell's source and every output's text, located by cell and line."""
    cells = json.loads(path.read_text()).get("cells", [])
    lines: list[tuple[str, str]] = []
    for k, cell in enumerate(cells):
        texts = [_joined(cell.get("source", ""))]
        for output in cell.get("outputs", []):
            texts.append(_joined(output.get("text", "")))
            for mime, data in output.get("data", {}).items():
                if mime.startswith("text/") or mime == "application/json":
                    texts.append(_joined(data) if not isinstance(data, dict) else json.dumps(data))
        for n, line in enumerate("\n".join(texts).splitlines(), start=1):
            lines.append((f"cell {k}:{n}", line))
    return Surface(path.relative_to(root).as_posix(), tuple(lines))


def _joined(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)
