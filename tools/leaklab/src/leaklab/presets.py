"""Toolchain presets (`presets.toml`): a lab names its toolchain and adds only what
differs, so the sbt command line, cargo's shared target folder and its freshness rule
are written once, not copied into every lab.toml."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

import msgspec

from leaklab.manifest import Argv


class _PresetFile(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    commands: tuple[Argv, ...] = ()
    test: tuple[Argv, ...] = ()
    values: dict[str, str] = {}
    touch_sources: bool = False
    reuse_outputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Preset:
    commands: tuple[tuple[str, ...], ...] = ()
    test: tuple[tuple[str, ...], ...] = ()
    values: dict[str, str] = field(default_factory=dict)
    touch_sources: bool = False
    reuse_outputs: tuple[str, ...] = ()


NONE = Preset()


@cache
def _all() -> dict[str, Preset]:
    raw = tomllib.loads(resources.files("leaklab").joinpath("presets.toml").read_text())
    typed = msgspec.convert(raw, dict[str, _PresetFile])
    return {
        name: Preset(p.commands, p.test, dict(p.values), p.touch_sources, p.reuse_outputs)
        for name, p in typed.items()
    }


def names() -> list[str]:
    return sorted(_all())


def find(name: str) -> Preset | None:
    return _all().get(name)
