"""Every relative link and image in every tracked Markdown file (READMEs, docs, decks,
the instructor guide) points at a file git tracks, so the course reads the same on
GitHub as in a clone: nothing points into an ignored build folder or a moved file."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import PurePosixPath
from urllib.parse import unquote

import pytest

from leaklab.paths import repo_root

ROOT = repo_root()
# [text](target "title"), ![alt](target), with an optional <target>; [label]: target.
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+[\"'(][^)]*)?\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.M)
HTML = re.compile(r"<(?:img|a|source)\b[^>]*?\b(?:src|href)\s*=\s*[\"']([^\"']+)[\"']", re.I)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CODE_SPAN = re.compile(r"(`+).+?\1", re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # http:, https:, mailto:, data:...


@cache
def tracked() -> frozenset[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return frozenset(path for path in out.split("\0") if path)


def markdown_files() -> list[str]:
    return sorted(p for p in tracked() if p.endswith(".md") and "node_modules/" not in p)


def targets(text: str) -> list[str]:
    """The link and image targets of a Markdown text, outside code and comments
    (a deck's generated-region markers and speaker notes are comments)."""
    for pattern in (FENCE, COMMENT):
        text = pattern.sub("", text)
    text = CODE_SPAN.sub("", text)
    found = [m.group(1) for p in (INLINE, REFERENCE, HTML) for m in p.finditer(text)]
    return [t.strip("<>") for t in found]


def resolve(source: str, target: str) -> str | None:
    """The repository path a relative target points at, or None for what is not a file
    link here (another site, a mail address, an anchor in the same page)."""
    if EXTERNAL.match(target) or target.startswith("#"):
        return None
    path = unquote(target.split("#", 1)[0].split("?", 1)[0])
    base = PurePosixPath("" if path.startswith("/") else PurePosixPath(source).parent)
    parts: list[str] = []
    for part in (base / path.lstrip("/")).parts:
        if part == "..":
            if not parts:
                return "../" + path  # above the repository: never a tracked file
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


def broken(source: str, text: str, files: frozenset[str]) -> list[str]:
    """The targets in `text` (from the file `source`) that are neither a file in `files`
    nor a folder holding one."""
    folders = {str(parent) for path in files for parent in PurePosixPath(path).parents}
    out = []
    for target in targets(text):
        path = resolve(source, target)
        if path is not None and path not in files and path not in folders:
            out.append(target)
    return out


def test_there_is_markdown_to_check() -> None:
    files = markdown_files()
    assert "README.md" in files and any(f.startswith("slides/") for f in files), files


@pytest.mark.parametrize("source", markdown_files())
def test_every_relative_link_resolves_to_a_tracked_file(source: str) -> None:
    text = (ROOT / source).read_text()
    bad = broken(source, text, tracked())
    assert not bad, f"{source} links to what git does not track: {bad}"


def test_the_checker_tells_a_broken_link_from_a_good_one() -> None:
    files = frozenset({"README.md", "slides/img/x.png", "labs/01/README.md"})
    good = (
        "[up](../README.md) ![img](img/x.png) [folder](../labs/01/ 'a title') "
        "[dot](./img/x.png#frag) [space](<img/x.png>)\n"
        "[web](https://example.com/a.png) [mail](mailto:a@b.c) [anchor](#top)\n"
        "`[code](not/a/link.md)`\n```\n[fenced](not/a/link.md)\n```\n<!-- [note](x.md) -->\n"
    )
    assert broken("slides/deck.md", good, files) == []
    bad = (
        "![plot](build/plots/a.png) [gone](nothing.md) [out](../../outside.md)\n"
        '<img src="missing.svg">\n[ref]: gone.md\n'
    )
    assert broken("slides/deck.md", bad, files) == [
        "build/plots/a.png",
        "nothing.md",
        "../../outside.md",
        "gone.md",
        "missing.svg",
    ]


# What a template's link holds until someone fills it in (the old Codespaces badge's
# `codespaces.new/OWNER/REPO`): external links are not fetched here, but none may be
# a placeholder.
PLACEHOLDER = re.compile(r"\b(OWNER|REPO|USER|ORG)\b|<org>|\{owner\}|\{repo\}")


def placeholders(text: str) -> list[str]:
    return [t for t in targets(text) if EXTERNAL.match(t) and PLACEHOLDER.search(t)]


@pytest.mark.parametrize("source", markdown_files())
def test_no_external_link_is_a_placeholder(source: str) -> None:
    bad = placeholders((ROOT / source).read_text())
    assert not bad, f"{source} links to a placeholder: {bad}"


def test_the_placeholder_check_catches_the_old_badge() -> None:
    badge = "[![Codespaces](https://github.com/codespaces/badge.svg)](https://codespaces.new/OWNER/REPO)"
    assert placeholders(badge) == ["https://codespaces.new/OWNER/REPO"]
    assert placeholders("[PR](https://github.com/elastic/fleet-server/pull/6747)") == []
