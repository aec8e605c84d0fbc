"""`leaklab dev new NN-slug --preset go`: the skeleton of a new lab, which parses from
the first minute, so `leaklab dev check` can list what is still to be written."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from leaklab import presets
from leaklab.errors import LeakLabError

RUNTIMES = {"go": "go", "cargo": "rust", "mix": "elixir", "sbt": "jvm"}


def new_lab(root: Path, slug: str, preset: str) -> list[Path]:
    """Write labs/<slug>/{lab.toml, README.md, service/, load/} and solutions/<slug>/
    (its answer.toml and README)."""
    if not re.fullmatch(r"\d{2}-[a-z0-9]+(-[a-z0-9]+)*", slug):
        raise LeakLabError(f"{slug!r} is not NN-words-with-dashes", "e.g. 06-go-timer-leak")
    if presets.find(preset) is None or preset not in RUNTIMES:
        raise LeakLabError(f"unknown preset {preset!r}", f"use one of: {', '.join(RUNTIMES)}")
    lab_dir = root / "labs" / slug
    taken = [p.name for p in (root / "labs").glob(f"{slug[:2]}-*")]
    if taken:
        raise LeakLabError(f"lab {slug[:2]} exists already ({', '.join(taken)})", "pick a number")
    values = {
        "@SLUG@": slug,
        "@NUMBER@": slug[:2],
        "@PRESET@": preset,
        "@RUNTIME@": RUNTIMES[preset],
    }
    template = resources.files("leaklab.authoring").joinpath("template")
    written = []
    answer = root / "solutions" / slug / "answer.toml"
    for name, target in (
        ("lab.toml", lab_dir / "lab.toml"),
        ("README.md", lab_dir / "README.md"),
        ("answer.toml", answer),
    ):
        text = template.joinpath(name).read_text()
        for key, value in values.items():
            text = text.replace(key, value)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        written.append(target)
    for folder in (lab_dir / "service", lab_dir / "load", root / "solutions" / slug):
        folder.mkdir(parents=True, exist_ok=True)
        keep = folder / (".gitkeep" if folder.name != slug else "README.md")
        keep.write_text("" if keep.name == ".gitkeep" else f"# Lab {slug[:2]}: the solution\n")
        written.append(keep)
    return written
