"""No figure without its source: the numbers the course quotes, recomputed and found.

Each lab declares the figures its prose quotes in `datasets/NN-slug/figures.toml`
(figures of the course's own files, such as the top README, in `datasets/figures.toml`):
the text as quoted, the files it appears in, and where it comes from (`leaklab.
figures_sources`: a slope, a count, a peak of a committed run, a key of `lab.toml`, a
line of a recorded command's output). `check` recomputes every declared figure, formats
it as declared and compares it with the quoted text, then looks for the text in each
file it names. A re-captured dataset therefore needs no edit here: its figures file is
re-checked, and every quote the new run no longer gives is named with its new value.

Why a declaration beside the prose rather than generated snippets: the prose stays
plain Markdown, notebook markdown and Marp that five lab authors edit in parallel; a
generator would own every sentence with a number in it. A declaration only owns the
number, and a stale one fails with the file, the quote and the value to write instead.

Coverage: `scan` finds every number the prose states with a unit (MB, MB/min, KiB, s,
goroutines, %, ...), every bracketed interval and every number in a table row, outside
fenced code (commands and recorded tool output, quoted verbatim). Each must lie inside
an occurrence of a declared text, or be listed under `[unsourced."path"]` in the
figures file that owns the path (its lab's, or the course's), with the reason it waits.
The list only shrinks: a listed figure the prose no longer holds unsourced fails too.
"""

from __future__ import annotations

import json
import re
import string
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leaklab import figures_sources
from leaklab.errors import LeakLabError

FILE_NAME = "figures.toml"
# The files whose prose quotes figures: the course README, each lab's README, the
# notebooks' markdown, the decks with their speaker notes, the instructor guide, and the
# solutions' READMEs. Globs, from the repository root.
PROSE = (
    "README.md",
    "labs/*/README.md",
    "notebooks/*.ipynb",
    "slides/[0-9]*.md",
    "slides/INSTRUCTOR.md",
    "solutions/*/README.md",
)

# A minus sign may be typeset as U+2212; a thousands separator sits between digits.
_NUMBER = "[-\u2212+]?" + r"\d(?:[\d,]*\d)?(?:\.\d+)?"
# A number with a unit. Longest units first, so that `MB/min` is not read as `MB`.
UNITS = (
    "MB/min", "MiB/min", "KB/min", "/min", "B/op", "allocs/op", "new-objects/op", "ns/op",
    "MiB", "MB", "KiB", "KB", "kB", "GB", "GiB", "bytes", "B",
    "ms", "µs", "s", "min", "minutes", "minute", "seconds", "second", "h", "hours",
    "goroutines", "processes", "process", "fibers", "threads", "collections",
    "check-ins", "agents", "requests", "messages", "updates", "events", "replays",
    "steps", "samples", "runs", "%", "x", "\u00d7", "times",
)  # fmt: skip
_UNIT = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
WITH_UNIT = re.compile(rf"(?<![\w.]){_NUMBER}\s?(?:{_UNIT})(?![\w/])")
INTERVAL = re.compile(rf"\[\s*{_NUMBER}\s*,\s*{_NUMBER}\s*\]")
# A table cell's number; not one with a leading zero (lab 01) nor a clock time (0:45).
BARE = re.compile(rf"(?<![\w.\-/#:])(?!0\d){_NUMBER}(?![\w\-:]|\.\d)")
FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")
TABLE_RULE = re.compile(r"^\|[\s:|-]+\|$")
# A deck's generated regions (`leaklab.authoring.slides`): `leaklab slides check` already
# recomputes them from their sources (tables from the datasets, excerpts from the files).
GENERATED = re.compile(
    r"<!-- (?P<kind>include|table|plot): [^>]*?-->\n.*?<!-- /(?P=kind) -->", re.S
)


@dataclass(frozen=True)
class Figure:
    """One quoted figure: its text, where it is quoted, and where it comes from."""

    text: str
    files: tuple[str, ...]
    source: dict[str, Any]
    fmt: str
    owner: Path  # the figures file that declares it

    def describe(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.source.items())
        return f"{args}, as {self.fmt!r}"


@dataclass(frozen=True)
class FiguresFile:
    """A lab's (or the course's) declarations and its list of unsourced figures."""

    path: Path
    slug: str | None  # None: the course's own files
    figures: tuple[Figure, ...]
    unsourced: dict[str, tuple[str, tuple[str, ...]]]  # path -> (reason, figures)


@dataclass(frozen=True)
class Problem:
    """One reason the check fails, in one line a maintainer can act on."""

    file: str
    text: str

    def __str__(self) -> str:
        return f"{self.file}: {self.text}"


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)
    checked: int = 0  # declared figures recomputed
    unsourced: int = 0  # figures on the shrink-only lists


# Short names a lab's figures file may use in `in` for its own files.
ALIASES = {
    "README": "labs/{slug}/README.md",
    "solution": "solutions/{slug}/README.md",
    "deck": "slides/{slug}.md",
    "notebook": "notebooks/{slug}.ipynb",
    "diagnosis": "notebooks/{slug}-diagnosis.ipynb",
    "instructor": "slides/INSTRUCTOR.md",
    "course": "README.md",
}


def expand(name: str, slug: str | None) -> str:
    alias = ALIASES.get(name)
    if alias is None or ("{slug}" in alias and slug is None):
        return name
    return alias.format(slug=slug)


def load(path: Path, slug: str | None) -> FiguresFile:
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise LeakLabError(f"{path}: not valid TOML: {err}") from err
    figures = []
    for i, entry in enumerate(doc.get("figure", [])):
        missing = [k for k in ("text", "in", "from", "format") if k not in entry]
        if missing:
            raise LeakLabError(f"{path}: figure {i + 1} lacks {', '.join(missing)}")
        source = {k: v for k, v in entry.items() if k not in ("text", "in", "format")}
        files = tuple(expand(name, slug) for name in entry["in"])
        figures.append(Figure(entry["text"], files, source, entry["format"], path))
    unsourced = {
        expand(name, slug): (str(v.get("reason", "")), tuple(v.get("figures", [])))
        for name, v in doc.get("unsourced", {}).items()
    }
    return FiguresFile(path, slug, tuple(figures), unsourced)


def figures_files(root: Path) -> list[FiguresFile]:
    """The course's figures file, then each lab's, in course order (a lab without one
    has nothing declared: every figure in its files must then be listed somewhere)."""
    out = []
    course = root / "datasets" / FILE_NAME
    if course.is_file():
        out.append(load(course, None))
    for lab_toml in sorted((root / "labs").glob("*/lab.toml")):
        slug = lab_toml.parent.name
        path = root / "datasets" / slug / FILE_NAME
        if path.is_file():
            out.append(load(path, slug))
    return out


def prose_files(root: Path) -> list[str]:
    found = {p.relative_to(root).as_posix() for g in PROSE for p in root.glob(g)}
    return sorted(found)


def owner_slug(rel: str, slugs: Iterable[str]) -> str | None:
    """The lab a prose file belongs to (its path names the lab), or None: the course's."""
    return next((s for s in slugs if s in rel), None)


def prose(path: Path) -> str:
    """The text a reader reads: a notebook's markdown cells, or the whole file, with
    fenced code blanked out (same length, so positions stay) and whitespace kept."""
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text())["cells"]
        text = "\n\n".join(
            "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in cells
            if c["cell_type"] == "markdown"
        )
    else:
        text = path.read_text()
    return readable(text)


def readable(text: str) -> str:
    """The text with fenced code and a deck's generated regions blanked out: spaces of
    the same length, so that positions and line breaks stay."""

    def blank(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))

    return FENCE.sub(blank, GENERATED.sub(blank, text))


def quote_pattern(text: str) -> re.Pattern[str]:
    """The quoted text, with any run of whitespace (a wrapped line) matching any other,
    and not glued to a longer number on either side."""
    parts = [re.escape(p) for p in text.split()]
    before = r"(?<![\d.])" if text[:1].isdigit() else ""
    after = r"(?!\d|\.\d)" if text[-1:].isdigit() else ""
    return re.compile(before + r"\s+".join(parts) + after)


def scan(text: str) -> Iterator[tuple[int, int, str]]:
    """Every figure the prose states: (start, end, text). Numbers with a unit and
    bracketed intervals anywhere outside code; every number in a table's body row."""
    skip = [m.span() for m in INLINE_CODE.finditer(text)]

    def in_code(start: int) -> bool:
        return any(a <= start < b for a, b in skip)

    seen: list[tuple[int, int]] = []
    found: list[tuple[int, int, str]] = []
    for pattern in (INTERVAL, WITH_UNIT):
        for m in pattern.finditer(text):
            if in_code(m.start()) or any(a <= m.start() < b for a, b in seen):
                continue
            seen.append(m.span())
            found.append((m.start(), m.end(), " ".join(m.group(0).split())))
    offset = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("|") and not TABLE_RULE.match(stripped):
            for m in BARE.finditer(line):
                start = offset + m.start()
                if in_code(start) or any(a <= start < b for a, b in seen):
                    continue
                found.append((start, offset + m.end(), m.group(0)))
        offset += len(line)
    return iter(sorted(found))


def _header_row(text: str, start: int) -> bool:
    """True when the table row holding `start` is a header (the next line is a rule)."""
    end = text.find("\n", start)
    following = text[end + 1 : text.find("\n", end + 1)] if end >= 0 else ""
    return bool(TABLE_RULE.match(following.strip()))


def uncovered(text: str, quotes: Iterable[str]) -> list[str]:
    """The figures in `text` that no occurrence of a declared quote covers."""
    spans = [m.span() for q in quotes for m in quote_pattern(q).finditer(text)]
    out = []
    for start, end, token in scan(text):
        if _header_row(text, start):
            continue  # a table's header names units and columns, not figures
        if not any(a <= start and end <= b for a, b in spans):
            out.append(token)
    return out


def typed_figures(fmt: str) -> list[str]:
    """Figures written into a format's own text rather than computed: a quote must not
    cover a number its source does not give."""
    literal = INLINE_CODE.sub(" ", "".join(text for text, *_ in string.Formatter().parse(fmt)))
    return [m.group(0) for m in BARE.finditer(literal)]


def check(root: Path) -> Report:
    """Recompute every declared figure and check the prose against the declarations
    and the shrink-only lists. Returns every problem found, not only the first."""
    report = Report()
    files = figures_files(root)
    slugs = [p.parent.name for p in (root / "labs").glob("*/lab.toml")]
    quotes: dict[str, list[str]] = {}
    texts: dict[str, str] = {}

    def text_of(rel: str) -> str | None:
        if rel not in texts:
            path = root / rel
            texts[rel] = prose(path) if path.is_file() else ""
        return texts[rel] if (root / rel).is_file() else None

    for ff in files:
        values = figures_sources.Sources(root, ff.slug)
        for fig in ff.figures:
            report.checked += 1
            where = ff.path.relative_to(root).as_posix()
            typed = typed_figures(fig.fmt)
            if typed:
                report.problems.append(
                    Problem(
                        where,
                        f"{fig.text!r}: its format types {', '.join(map(repr, typed))} itself: "
                        "every figure in a quote comes from its source (split the quote)",
                    )
                )
            try:
                value = figures_sources.render(fig.fmt, values.compute(fig.source))
            except LeakLabError as err:
                report.problems.append(Problem(where, f"{fig.text!r}: {err}"))
                continue
            for rel in fig.files:
                quotes.setdefault(rel, []).append(fig.text)
                if value != fig.text:
                    report.problems.append(
                        Problem(
                            rel,
                            f"quotes {fig.text!r}, the source gives {value!r} "
                            f"({fig.describe()}; declared in {where})",
                        )
                    )
                text = text_of(rel)
                if text is None:
                    report.problems.append(Problem(rel, f"no such file (declared in {where})"))
                elif not quote_pattern(fig.text).search(text):
                    report.problems.append(
                        Problem(rel, f"does not quote {fig.text!r} (declared in {where})")
                    )
    listed = {rel: lst for ff in files for rel, lst in ff.unsourced.items()}
    owners = {ff.slug: ff for ff in files}
    for rel in prose_files(root):
        slug = owner_slug(rel, slugs)
        owner = owners.get(slug)
        lst = owner.unsourced.get(rel) if owner else None
        allowed = set(lst[1]) if lst else set()
        report.unsourced += len(allowed)
        found = uncovered(text_of(rel) or "", quotes.get(rel, []))
        home = (
            owner.path.relative_to(root).as_posix()
            if owner
            else f"datasets/{slug + '/' if slug else ''}{FILE_NAME}"
        )
        new = sorted(set(found) - allowed)
        if new:
            report.problems.append(
                Problem(
                    rel,
                    f"{len(new)} figure(s) without a source: {', '.join(repr(t) for t in new)}"
                    f" (declare each in {home}, or list it under [unsourced] with the reason)",
                )
            )
        gone = sorted(allowed - set(found))
        if gone:
            report.problems.append(
                Problem(
                    rel,
                    f"listed as unsourced in {home} but no longer unsourced here, remove: "
                    + ", ".join(repr(t) for t in gone),
                )
            )
    for rel in listed:
        if not (root / rel).is_file():
            report.problems.append(Problem(rel, "listed under [unsourced] but not a file"))
    return report


def unsourced_now(root: Path, rel: str) -> list[str]:
    """The figures of one prose file that no declaration covers yet, each once, in the
    order they appear (for writing or re-writing a file's [unsourced] list)."""
    quotes = [fig.text for ff in figures_files(root) for fig in ff.figures if rel in fig.files]
    return list(dict.fromkeys(uncovered(prose(root / rel), quotes)))


def owned_files(root: Path, slug: str | None) -> list[str]:
    """The prose files whose [unsourced] list a lab's (or the course's) file keeps."""
    slugs = [p.parent.name for p in (root / "labs").glob("*/lab.toml")]
    return [rel for rel in prose_files(root) if owner_slug(rel, slugs) == slug]


def unsourced_toml(root: Path, slug: str | None, reason: str) -> str:
    """The [unsourced] tables for what a lab's (or the course's) files hold unsourced
    now, as TOML to paste into its figures file (an existing reason is kept). For a new
    figures file or a re-captured lab; a list written this way is then only shrunk."""
    path = root / "datasets" / (f"{slug}/" if slug else "") / FILE_NAME
    known = load(path, slug).unsourced if path.is_file() else {}
    out = []
    for rel in owned_files(root, slug):
        found = unsourced_now(root, rel)
        if not found:
            continue
        why = known.get(rel, (reason, ()))[0] or reason
        out.append(f"[unsourced.{json.dumps(_alias_of(rel, slug))}]")
        out.append(f"reason = {json.dumps(why, ensure_ascii=False)}")
        out.append("figures = [")
        line = " "
        for token in found:
            item = f" {json.dumps(token, ensure_ascii=False)},"
            if len(line) + len(item) > 92:
                out.append(line)
                line = " "
            line += item
        out += [line, "]", ""]
    return "\n".join(out)


def _alias_of(rel: str, slug: str | None) -> str:
    return next((a for a in ALIASES if expand(a, slug) == rel), rel)


def rewrite_unsourced(root: Path, slug: str | None, reason: str) -> Path:
    """Replace a figures file's [unsourced] tables with what its files hold unsourced now
    (declarations and comments above them stay). An author's act, reviewed in the diff:
    after merging prose edits, or when a lab's figures file is first written."""
    path = root / "datasets" / (f"{slug}/" if slug else "") / FILE_NAME
    head = path.read_text() if path.is_file() else ""
    cut = head.find("\n[unsourced.")
    if cut >= 0:
        head = head[: cut + 1]
    tables = unsourced_toml(root, slug, reason)
    path.write_text(head.rstrip("\n") + "\n\n" + tables if head else tables)
    return path
