"""The `lab.toml` and `answer.toml` file formats, as typed structures (msgspec), unknown
keys rejected.

This module is the schema and nothing else: what keys exist, their types and their
defaults. `msgspec.convert` does the type checking; a mistake becomes one line naming
the file, the table, the key and, for a misspelt key, the closest valid one. The rules
that relate one key to another (a verdict series must be one of the fitted series, a
snapshot needs exactly one of `http` and `command`) live in `leaklab.spec`, which turns
these structures into the `Lab` the harness uses.

`lab.toml` says how to build, run and measure a lab and nothing of its answer; the
answer (hints, the solution's patches and stage names, its regression tests, the grade's
hint and the words that give the answer away) is `solutions/NN-slug/answer.toml`, so a
learner reading the lab's manifest for its standard load reads nothing of the fix.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from pathlib import Path
from typing import Annotated, Literal, TypeVar

import msgspec

from leaklab.errors import LeakLabError

# The version of this format; a lab.toml may state it (`format_version = 1`), and a file
# written for a later harness is refused instead of half-understood.
FORMAT_VERSION = 1

Argv = Annotated[tuple[str, ...], msgspec.Meta(min_length=1)]
Text = Annotated[str, msgspec.Meta(min_length=1)]
Seconds = Annotated[float, msgspec.Meta(ge=0)]
Positive = Annotated[float, msgspec.Meta(gt=0)]
Params = dict[str, str | int | float]
Env = dict[str, str]
_T = TypeVar("_T")


class _Table(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A TOML table: every key it may hold is a field; any other key is an error."""


class Ready(_Table, frozen=True, kw_only=True):
    http: str | None = None
    tcp: bool | None = None
    timeout_s: Seconds = 30.0


class Build(_Table, frozen=True, kw_only=True):
    # A preset (`leaklab.presets`) supplies the commands a lab does not give itself.
    preset: str | None = None
    commands: tuple[Argv, ...] | None = None
    test: tuple[Argv, ...] | None = None
    env: Env = {}
    # Named extra steps built only when a run asks for them (`--with NAME`): binaries
    # that one section of a lab uses and every other build should not pay for.
    extras: dict[str, tuple[Argv, ...]] = {}


class Service(_Table, frozen=True, kw_only=True):
    command: Argv
    env: Env = {}
    ready: Ready = Ready()
    max_s: Seconds = 120.0


class Load(_Table, frozen=True, kw_only=True):
    build: tuple[Argv, ...] = ()
    command: Argv
    params: Params = {}
    grace_s: Seconds = 15.0
    env: Env = {}


class Run(_Table, frozen=True, kw_only=True):
    sample_interval_s: Seconds = 0.25
    pre_load_s: Seconds = 2.0
    idle_s: Seconds = 0.0


class Sampler(_Table, frozen=True, kw_only=True):
    kind: Literal["http_json", "jsonl_file"]
    path: str | None = None
    interval_s: Seconds = 0.5
    series: dict[str, str] = {}
    time_field: str | None = None


class Snapshot(_Table, frozen=True, kw_only=True):
    name: Text
    http: str | None = None
    command: Argv | None = None
    timeout_s: Seconds = 60.0
    env: Env = {}


class Aux(_Table, frozen=True, kw_only=True):
    name: Text
    command: Argv
    env: Env = {}
    ready: Ready = Ready()


class ImplementationService(_Table, frozen=True, kw_only=True):
    command: Argv
    env: Env = {}
    ready: Ready = Ready()


class Implementation(_Table, frozen=True, kw_only=True):
    name: Text
    folder: str | None = None
    build: Build
    service: ImplementationService
    snapshots: tuple[Snapshot, ...] = ()


class Analysis(_Table, frozen=True, kw_only=True):
    warmup_s: Seconds = 10.0
    series: tuple[str, ...] = ("rss_bytes",)
    verdict_series: str | None = None
    grows_above: Seconds = 1.0
    flat_below: Seconds = 1.0
    look_every_s: Seconds = 10.0


class Bench(_Table, frozen=True, kw_only=True):
    command: Argv
    compare: Argv | None = None


class Check(_Table, frozen=True, kw_only=True):
    name: Text
    measure: Text
    at_least: float | None = None
    at_most: float | None = None
    of: Text


class Grade(_Table, frozen=True, kw_only=True):
    duration_s: Positive | None = None
    rss_grows_above: Positive | None = None
    checks: tuple[Check, ...] = ()


class LabInfo(_Table, frozen=True, kw_only=True):
    slug: Text
    title: Text
    runtime: Text
    seed: Text
    story: Text
    versions: dict[str, Argv] = {}
    editable: tuple[str, ...] = ("service",)
    fixtures: tuple[str, ...] = ()
    course_tests: tuple[str, ...] | None = None


class LabFile(_Table, frozen=True, kw_only=True):
    """A whole `labs/NN/lab.toml`."""

    format_version: Annotated[int, msgspec.Meta(ge=1, le=FORMAT_VERSION)] = FORMAT_VERSION
    lab: LabInfo
    build: Build
    service: Service
    load: Load | None = None
    params: Params = {}
    run: Run = Run()
    samplers: tuple[Sampler, ...] = ()
    snapshots: tuple[Snapshot, ...] = ()
    aux: tuple[Aux, ...] = ()
    implementations: tuple[Implementation, ...] = ()
    analysis: Analysis
    bench: Bench | None = None
    grade: Grade = Grade()


class AnswerGrade(_Table, frozen=True, kw_only=True):
    # Printed under a failed grade.
    hint: str = ""


class AnswerFile(_Table, frozen=True, kw_only=True):
    """A whole `solutions/NN-slug/answer.toml`: everything of a lab that is its answer."""

    format_version: Annotated[int, msgspec.Meta(ge=1, le=FORMAT_VERSION)] = FORMAT_VERSION
    # The exercise's hint ladder, served one at a time by `leaklab hint NN [K]`.
    hints: tuple[Text, ...] = ()
    # Words and phrases that give the cause or the fix away: the spoiler test keeps
    # them off every pre-exercise surface (`leaklab.spoilers`).
    spoilers: tuple[Text, ...] = ()
    # The solution's patches (files beside this one), applied in order, and their names.
    patches: tuple[str, ...] = ()
    stage_names: tuple[str, ...] | None = None
    # Tests the solution adds (paths inside service/): a grade and `leaklab check` run
    # them against the learner's tree.
    regression_tests: tuple[str, ...] = ()
    grade: AnswerGrade = AnswerGrade()


def read(path: Path) -> LabFile:
    """Read and type-check one lab.toml; `{lab}` anywhere is the lab's folder."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise LeakLabError(f"{path} does not exist", "run from a Leak Lab checkout") from None
    return _convert(text.replace("{lab}", str(path.parent)), path, LabFile)


def read_answer(path: Path) -> AnswerFile:
    """Read and type-check one answer.toml; a lab without one (a new lab, a test's
    fixture) has no hints, no solution stages and no spoilers yet."""
    if not path.is_file():
        return AnswerFile()
    return _convert(path.read_text(), path, AnswerFile)


def _convert(text: str, path: Path, kind: type[_T]) -> _T:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LeakLabError(f"{path} is not valid TOML: {exc}", "fix the syntax") from None
    try:
        return msgspec.convert(raw, kind)
    except msgspec.ValidationError as exc:
        raise explain(exc, path, kind) from None


_ERROR = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<at>[^`]*)`)?$")
_UNKNOWN = re.compile(r"Object contains unknown field `(?P<key>[^`]+)`")
_MISSING = re.compile(r"Object missing required field `(?P<key>[^`]+)`")


def explain(exc: msgspec.ValidationError, path: Path, kind: type[object] = LabFile) -> LeakLabError:
    """msgspec's message (`Object contains unknown field `x` - at `$.analysis``) as the
    course says it: the file, the table in TOML's own words, the key, what to do."""
    match = _ERROR.match(str(exc))
    what, at = (match["what"], match["at"] or "") if match else (str(exc), "")
    table = f"[{at.lstrip('.')}] " if at else ""
    if unknown := _UNKNOWN.search(what):
        key = unknown["key"]
        known = sorted(fields_at(at, kind))
        near = difflib.get_close_matches(key, known, n=1)
        return LeakLabError(
            f"{path}: {table}has an unknown key {key!r}",
            f"did you mean {near[0]!r}?" if near else f"known keys: {', '.join(known)}",
        )
    if missing := _MISSING.search(what):
        return LeakLabError(f"{path}: {table}needs the key {missing['key']!r}", _SCHEMA_HELP)
    table, _, key = at.lstrip(".").rpartition(".")
    where = f"[{table}] {key}" if table else key or "the file"
    return LeakLabError(f"{path}: {where}: {what[0].lower()}{what[1:]}", _SCHEMA_HELP)


_SCHEMA_HELP = "see tools/leaklab/src/leaklab/manifest.py for every key, its type and default"


def fields_at(at: str, kind: type[object] = LabFile) -> list[str]:
    """The keys of the table at a msgspec path (`.samplers[0]`), for suggestions."""
    info: msgspec.inspect.Type = msgspec.inspect.type_info(kind)
    for name, _ in re.findall(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]", at):
        info = _struct_in(info)
        if name:
            info = next((f.type for f in _fields(info) if f.encode_name == name), info)
        elif isinstance(info, msgspec.inspect.VarTupleType):
            info = info.item_type
    return [f.encode_name for f in _fields(_struct_in(info))]


def _struct_in(info: msgspec.inspect.Type) -> msgspec.inspect.Type:
    """Look through `X | None` and `tuple[X, ...]` to the table type inside."""
    if isinstance(info, msgspec.inspect.UnionType):
        return next((t for t in info.types if not isinstance(t, msgspec.inspect.NoneType)), info)
    return info


def _fields(info: msgspec.inspect.Type) -> tuple[msgspec.inspect.Field, ...]:
    if isinstance(info, msgspec.inspect.VarTupleType):
        info = _struct_in(info.item_type)
    return info.fields if isinstance(info, msgspec.inspect.StructType) else ()
