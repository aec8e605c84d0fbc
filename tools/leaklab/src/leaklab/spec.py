"""`lab.toml`: the single description of a lab, parsed and validated with clear errors.

Everything runtime-specific (how to build a Go binary, which JSON field is the heap)
lives in the lab's `lab.toml`; the harness core only knows argv lists, placeholders
and a few generic sampler kinds.
"""

from __future__ import annotations

import difflib
import re
import shlex
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from leaklab.errors import LeakLabError
from leaklab.paths import repo_root

SAMPLER_KINDS = ("http_json", "jsonl_file")
# Where each toolchain keeps its tests, inside the lab folder: the default of
# `[lab] course_tests` (a lab names its own when its layout differs).
COURSE_TESTS: dict[str, tuple[str, ...]] = {
    "go": ("service/**/*_test.go",),
    "rust": ("service/*/tests/**",),
    "elixir": ("service/test/**",),
    "jvm": ("service/src/test/**",),
}
PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
# An argv element that is exactly `{*name}` becomes several: the value, its own
# placeholders filled, split like a shell would (`workload = "--mode burst --messages 100"`).
SPLAT = re.compile(r"\{\*([a-z_][a-z0-9_]*)\}")


@dataclass(frozen=True)
class Command:
    """An argv with `{placeholders}`, run in a given directory with extra environment."""

    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)

    def render(self, values: dict[str, str]) -> list[str]:
        out: list[str] = []
        for arg in self.argv:
            if splat := SPLAT.fullmatch(arg):
                out.extend(shlex.split(fill(fill("{" + splat.group(1) + "}", values), values)))
            else:
                out.append(fill(arg, values))
        return out

    def render_env(self, values: dict[str, str]) -> dict[str, str]:
        return {k: fill(v, values) for k, v in self.env.items()}


@dataclass(frozen=True)
class Build:
    """How to turn a variant's source tree into runnable files in `{out}`."""

    commands: tuple[Command, ...]
    test: tuple[Command, ...]


@dataclass(frozen=True)
class Ready:
    """How to know a process is ready: an HTTP 2xx on a path, a TCP connect, or nothing."""

    http: str | None
    tcp: bool
    timeout_s: float


@dataclass(frozen=True)
class Service:
    """The measured process: how to start it and how to know it is ready.

    With a `[load]` the service listens on `{port}` and the load program drives it.
    Without one the service is self-driving (a client program, a batch job): it does
    its work, prints the load program's progress lines on stdout, and exits; `max_s`
    bounds how long the harness waits for it.
    """

    command: Command
    ready: Ready
    max_s: float

    @property
    def ready_http(self) -> str | None:
        return self.ready.http

    @property
    def ready_timeout_s(self) -> float:
        return self.ready.timeout_s


@dataclass(frozen=True)
class Aux:
    """A helper process started before the service (a fake broker, a database).

    It gets its own free loopback port, `{<name>_port}` (and `{<name>_url}`), its own
    process group and log, and is stopped with everything else at the end of a run.
    It is not measured, except for its RSS as the series `<name>_rss_bytes`.
    """

    name: str
    command: Command
    ready: Ready


@dataclass(frozen=True)
class Load:
    """The lab's bounded load program, built once from `labs/NN/load`."""

    build: tuple[Command, ...]
    command: Command
    params: dict[str, str]
    grace_s: float


@dataclass(frozen=True)
class Sampler:
    """A runtime's own series: polled over HTTP (`http_json`) or tailed from a file."""

    kind: str
    series: dict[str, str]
    interval_s: float
    path: str | None
    # jsonl_file: a field holding the line's own time in seconds since the run's t_s = 0
    # (for a self-driving service, since it started); without it a line is stamped when
    # the harness reads it.
    time_field: str | None = None


@dataclass(frozen=True)
class Snapshot:
    """An artefact taken when the load ends: an HTTP resource or a command's output."""

    name: str
    http: str | None
    command: Command | None
    timeout_s: float = 60.0


@dataclass(frozen=True)
class Analysis:
    """Which window and series the summary fits, and the written-down verdict rule."""

    warmup_s: float
    series: tuple[str, ...]
    verdict_series: str
    grows_above: float
    flat_below: float


@dataclass(frozen=True)
class Bench:
    """The per-operation view: a benchmark command and how to compare two outputs."""

    command: Command
    compare: Command | None


@dataclass(frozen=True)
class Implementation:
    """Another implementation of the same API, measured under the same load.

    `[[implementations]]` names a folder beside `service/` (exported from git HEAD like
    `broken`) with its own build, start command and snapshots; the load, samplers and
    analysis are the lab's. Its name is a variant of its own (lab 05's `tokio`), so
    `leaklab run/compare` show it beside broken and fixed. It is not graded: a grade
    measures a fix of `service/`.
    """

    name: str
    folder: str
    build: Build
    service: Service
    snapshots: tuple[Snapshot, ...]


@dataclass(frozen=True)
class Lab:
    """One lab, as its `lab.toml` describes it."""

    number: str
    slug: str
    title: str
    runtime: str
    seed: str
    story: str
    root: Path
    patches: tuple[str, ...]
    stage_names: tuple[str, ...]
    build: Build
    service: Service
    load: Load  # empty (no command) when the service is self-driving
    samplers: tuple[Sampler, ...]
    snapshots: tuple[Snapshot, ...]
    analysis: Analysis
    sample_interval_s: float
    pre_load_s: float
    idle_s: float
    versions: dict[str, tuple[str, ...]]
    bench: Bench | None
    aux: tuple[Aux, ...] = ()
    extra_params: dict[str, str] = field(default_factory=dict)
    self_driving: bool = False  # no [load]: the service drives itself and exits
    implementations: tuple[Implementation, ...] = ()
    # What a learner may change, relative to the lab folder: `service` or folders below
    # it. A grade takes only these from the learner's tree; the rest of the service (a
    # fake peer, a metrics module) and everything else comes from the published lab.
    editable: tuple[str, ...] = ("service",)
    # Files inside the editable folders that measure the service (a metrics module, an
    # introspection probe): a grade always takes them from the published lab.
    fixtures: tuple[str, ...] = ()
    # Globs (inside the lab folder) of the course's own tests: a grade runs them as
    # published, plus the solution's regression tests, against the learner's code.
    course_tests: tuple[str, ...] = ()
    # The exercise's hint ladder, in order (`leaklab hint NN`); the README shows the same.
    hints: tuple[str, ...] = ()
    # The solution's regression tests (paths inside service/), added by its last patch:
    # the course checks they fail on broken and pass on fixed.
    regression_tests: tuple[str, ...] = ()
    # Where the lab's own files (lab.toml, load/, service/, solutions/, datasets/) are
    # read from: the repository (`root`), or a copy of the published lab that a grade
    # reads instead. `root` stays the repository: builds, runs and the learner's tree.
    source: Path | None = None

    @property
    def params(self) -> dict[str, str]:
        """The run's parameters: `[params]`, then `[load.params]` (overridable with -p)."""
        return {**self.extra_params, **self.load.params}

    @property
    def files(self) -> Path:
        """The folder holding `labs/`, `solutions/` and `datasets/` for this lab."""
        return self.source or self.root

    @property
    def lab_dir(self) -> Path:
        return self.files / "labs" / self.slug

    @property
    def service_dir(self) -> Path:
        return self.lab_dir / "service"

    @property
    def solution_dir(self) -> Path:
        return self.files / "solutions" / self.slug

    @property
    def dataset_dir(self) -> Path:
        return self.files / "datasets" / self.slug

    @property
    def learner_lab_dir(self) -> Path:
        """The lab folder in the learner's working tree (what `mine` is made of)."""
        return self.root / "labs" / self.slug

    @property
    def variants(self) -> list[str]:
        stages = [f"stage-{k}" for k in range(1, len(self.patches))]
        return ["broken", *stages, "fixed", *(i.name for i in self.implementations)]

    def implementation(self, variant: str) -> Implementation | None:
        return next((i for i in self.implementations if i.name == variant), None)

    def for_variant(self, variant: str) -> Lab:
        """The lab as one variant runs it: an implementation's own build, service and
        snapshots in place of `service/`'s; the lab itself for every other variant."""
        impl = self.implementation(variant)
        if impl is None:
            return self
        return replace(self, build=impl.build, service=impl.service, snapshots=impl.snapshots)


def fill(template: str, values: dict[str, str]) -> str:
    """Replace `{name}` placeholders; an unknown name is a lab.toml error, not a KeyError."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            known = ", ".join(sorted(values))
            raise LeakLabError(
                f"unknown placeholder {{{name}}} in {template!r}",
                f"use one of: {known}",
            )
        return values[name]

    return PLACEHOLDER.sub(one, template)


# Every key a lab.toml may have, by table; `*` marks a table whose keys are free (a map
# of names: params, series, versions, env). A key not listed is a mistake, and a silent
# one if nothing rejects it: a misspelt `flat_bellow` would leave the default in force.
_READY = {"http": None, "tcp": None, "timeout_s": None}
_BUILD = {"commands": None, "test": None, "env": "*"}
_SCHEMA: dict[str, object] = {
    "lab": {
        **dict.fromkeys(("slug", "title", "runtime", "seed", "story", "editable")),
        **dict.fromkeys(("hints", "fixtures", "course_tests")),
        "versions": "*",
    },
    "variants": dict.fromkeys(("patches", "stage_names", "regression_tests")),
    "build": _BUILD,
    "service": {"command": None, "env": "*", "ready": _READY, "max_s": None},
    "load": {"build": None, "command": None, "params": "*", "grace_s": None, "env": "*"},
    "params": "*",
    "run": dict.fromkeys(("sample_interval_s", "pre_load_s", "idle_s")),
    "samplers": dict.fromkeys(("kind", "path", "interval_s", "series", "time_field")),
    "snapshots": {**dict.fromkeys(("name", "http", "command", "timeout_s")), "env": "*"},
    "aux": {"name": None, "command": None, "env": "*", "ready": _READY},
    "implementations": {
        "name": None,
        "folder": None,
        "build": _BUILD,
        "service": {"command": None, "env": "*", "ready": _READY},
        "snapshots": {**dict.fromkeys(("name", "http", "command", "timeout_s")), "env": "*"},
    },
    "analysis": dict.fromkeys(
        ("warmup_s", "series", "verdict_series", "grows_above", "flat_below")
    ),
    "bench": dict.fromkeys(("command", "compare")),
    "grade": {
        "hint": None,
        "duration_s": None,
        "rss_grows_above": None,
        "checks": dict.fromkeys(("name", "measure", "at_least", "at_most", "of")),
    },
}


def check_keys(data: dict[str, Any], schema: dict[str, object], where: str, source: Path) -> None:
    """Reject any key the schema does not know, naming the closest one it does."""
    for key, value in data.items():
        if key not in schema:
            near = difflib.get_close_matches(key, list(schema), n=1)
            table = f"[{where}] " if where else ""
            raise LeakLabError(
                f"{source}: {table}has an unknown key {key!r}",
                f"did you mean {near[0]!r}?" if near else f"known keys: {', '.join(schema)}",
            )
        sub = schema[key]
        inner = f"{where}.{key}" if where else key
        if isinstance(sub, dict):
            items = value if isinstance(value, list) else [value]
            for item in items:
                if isinstance(item, dict):
                    check_keys(item, sub, inner, source)


class _Table:
    """A TOML table read with the file name and key path in every error."""

    def __init__(self, data: dict[str, Any], where: str, source: Path) -> None:
        self.data = data
        self.where = where
        self.source = source

    def _err(self, key: str, problem: str) -> LeakLabError:
        return LeakLabError(
            f"{self.source}: [{self.where}] {key} {problem}",
            "see tools/leaklab/README.md for the lab.toml schema",
        )

    def table(self, key: str, required: bool = True) -> _Table:
        value = self.data.get(key)
        if value is None and not required:
            return _Table({}, f"{self.where}.{key}", self.source)
        if not isinstance(value, dict):
            raise self._err(key, "is missing or not a table")
        return _Table(value, f"{self.where}.{key}", self.source)

    def tables(self, key: str) -> list[_Table]:
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self._err(key, "must be an array of tables ([[...]])")
        return [_Table(v, f"{self.where}.{key}[{i}]", self.source) for i, v in enumerate(value)]

    def text(self, key: str, default: str | None = None) -> str:
        value = self.data.get(key, default)
        if not isinstance(value, str) or not value:
            raise self._err(key, "is missing or not a non-empty string")
        return value

    def opt_str(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, str):
            raise self._err(key, "must be a string")
        return value

    def num(self, key: str, default: float) -> float:
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise self._err(key, "must be a non-negative number")
        return float(value)

    def strs(self, key: str, default: list[str] | None = None) -> tuple[str, ...]:
        value = self.data.get(key, default)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._err(key, "must be a list of strings")
        return tuple(value)

    def str_map(self, key: str) -> dict[str, str]:
        value = self.data.get(key, {})
        if not isinstance(value, dict):
            raise self._err(key, "must be a table of strings")
        out: dict[str, str] = {}
        for k, v in value.items():
            if isinstance(v, bool) or not isinstance(v, str | int | float):
                raise self._err(f"{key}.{k}", "must be a string or a number")
            out[k] = str(v)
        return out

    def command(self, key: str, env_key: str = "env") -> Command:
        argv = self.strs(key)
        if not argv:
            raise self._err(key, "must not be empty")
        return Command(argv, self.str_map(env_key))

    def commands(self, key: str) -> tuple[Command, ...]:
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(
            isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)
            for argv in value
        ):
            raise self._err(key, 'must be a list of argv lists, e.g. [["go", "build"]]')
        env = self.str_map("env")
        return tuple(Command(tuple(argv), env) for argv in value)


def load_lab(name: str, root: Path | None = None) -> Lab:
    """Find a lab by number (`01`, `1`) or folder name, and parse its lab.toml."""
    root = root or repo_root()
    slug = resolve_slug(name, root)
    return parse_lab(root / "labs" / slug / "lab.toml", root)


def lab_slugs(root: Path | None = None) -> list[str]:
    """Every lab folder that has a lab.toml, in course order."""
    labs = (root or repo_root()) / "labs"
    return sorted(p.parent.name for p in labs.glob("*/lab.toml"))


def resolve_slug(name: str, root: Path) -> str:
    slugs = lab_slugs(root)
    if name in slugs:
        return name
    wanted = name.zfill(2) if name.isdigit() else name
    matches = [s for s in slugs if s.split("-", 1)[0] == wanted]
    if len(matches) == 1:
        return matches[0]
    raise LeakLabError(
        f"unknown lab {name!r}",
        f"choose one of: {', '.join(slugs) or '(no labs found under labs/)'}",
    )


def parse_lab(path: Path, root: Path, source: Path | None = None) -> Lab:
    """Parse `labs/NN/lab.toml`; `source` is the folder it sits in when that is not
    `root` (a copy of the published lab). `{lab}` in any command is the lab folder."""
    try:
        text = path.read_text().replace("{lab}", str(path.parent))
        raw = tomllib.loads(text)
    except FileNotFoundError:
        raise LeakLabError(f"{path} does not exist", "run from a Leak Lab checkout") from None
    except tomllib.TOMLDecodeError as exc:
        raise LeakLabError(f"{path} is not valid TOML: {exc}", "fix the syntax") from None
    check_keys(raw, _SCHEMA, "", path)
    top = _Table(raw, "", path)
    lab = top.table("lab")
    slug = lab.text("slug")
    if slug != path.parent.name:
        raise lab._err("slug", f"is {slug!r} but the folder is {path.parent.name!r}")

    variants = top.table("variants", required=False)
    patches = variants.strs("patches", [])
    stage_names = variants.strs("stage_names", list(patches))
    if len(stage_names) != len(patches):
        raise variants._err("stage_names", "must name each patch once")

    versions = lab.table("versions", required=False).data
    build = top.table("build")
    service = top.table("service")
    has_load = "load" in raw
    load = top.table("load", required=False)
    analysis = top.table("analysis")
    run = top.table("run", required=False)

    samplers = []
    for s in top.tables("samplers"):
        kind = s.text("kind")
        if kind not in SAMPLER_KINDS:
            raise s._err("kind", f"is {kind!r}; expected one of {', '.join(SAMPLER_KINDS)}")
        if kind == "http_json" and not has_load:
            raise s._err("kind", "http_json needs a service that listens (a [load] section)")
        samplers.append(
            Sampler(
                kind,
                s.str_map("series"),
                s.num("interval_s", 0.5),
                s.opt_str("path"),
                s.opt_str("time_field"),
            )
        )
    snapshots = _snapshots(top, has_load)
    aux: list[Aux] = []
    for a in top.tables("aux"):
        name = a.text("name")
        if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or name in ("service", "load"):
            raise a._err("name", f"is {name!r}; use lower case letters, digits and _")
        if name in {x.name for x in aux}:
            raise a._err("name", f"{name!r} is used twice")
        aux.append(Aux(name, a.command("command"), _ready(a, default_tcp=False)))

    implementations = _implementations(top, has_load, {"broken", "fixed", "mine"})

    editable = lab.strs("editable", ["service"])
    for item in editable:
        if (item != "service" and not item.startswith("service/")) or ".." in item.split("/"):
            raise lab._err("editable", f"has {item!r}; name service/ or folders inside it")

    series = analysis.strs("series", ["rss_bytes"])
    verdict_series = analysis.text("verdict_series", series[0])
    if verdict_series not in series:
        raise analysis._err("verdict_series", f"must be one of {list(series)}")

    return Lab(
        number=slug.split("-", 1)[0],
        slug=slug,
        title=lab.text("title"),
        runtime=lab.text("runtime"),
        seed=lab.text("seed"),
        story=lab.text("story"),
        root=root,
        patches=patches,
        stage_names=stage_names,
        build=Build(build.commands("commands"), build.commands("test")),
        service=Service(
            service.command("command"),
            # A listening service is probed by TCP unless told otherwise (as before);
            # a self-driving one is not probed unless its lab.toml asks.
            _ready(service, default_tcp=has_load),
            service.num("max_s", 120),
        ),
        load=Load(
            load.commands("build"),
            load.command("command"),
            load.str_map("params"),
            load.num("grace_s", 15),
        )
        if has_load
        else Load((), Command(()), {}, 0.0),
        samplers=tuple(samplers),
        snapshots=snapshots,
        analysis=Analysis(
            warmup_s=analysis.num("warmup_s", 10),
            series=series,
            verdict_series=verdict_series,
            grows_above=analysis.num("grows_above", 1.0),
            flat_below=analysis.num("flat_below", 1.0),
        ),
        sample_interval_s=run.num("sample_interval_s", 0.25),
        pre_load_s=run.num("pre_load_s", 2),
        idle_s=run.num("idle_s", 0),
        versions={name: lab.table("versions").strs(name) for name in versions},
        bench=_bench(top.table("bench", required=False)),
        aux=tuple(aux),
        extra_params=top.str_map("params"),
        self_driving=not has_load,
        implementations=implementations,
        editable=editable,
        source=source,
        hints=lab.strs("hints", []),
        fixtures=_inside(lab, "fixtures", lab.strs("fixtures", [])),
        course_tests=lab.strs("course_tests", list(COURSE_TESTS.get(lab.text("runtime"), ()))),
        regression_tests=variants.strs("regression_tests", []),
    )


def _inside(lab: _Table, key: str, paths: tuple[str, ...]) -> tuple[str, ...]:
    for item in paths:
        if not item.startswith("service/") or ".." in item.split("/"):
            raise lab._err(key, f"has {item!r}; name a file inside service/")
    return paths


def _snapshots(owner: _Table, has_load: bool) -> tuple[Snapshot, ...]:
    snapshots = []
    for s in owner.tables("snapshots"):
        http, cmd = s.opt_str("http"), s.data.get("command")
        if (http is None) == (cmd is None):
            raise s._err("http/command", "exactly one of the two must be given")
        if http is not None and not has_load:
            raise s._err("http", "needs a service that listens (a [load] section)")
        snapshots.append(
            Snapshot(
                s.text("name"),
                http,
                s.command("command") if cmd else None,
                s.num("timeout_s", 60),
            )
        )
    return tuple(snapshots)


def _implementations(top: _Table, has_load: bool, taken: set[str]) -> tuple[Implementation, ...]:
    found: list[Implementation] = []
    for t in top.tables("implementations"):
        if not has_load:
            raise t._err("", "needs a service that listens (a [load] section)")
        name = t.text("name")
        if not re.fullmatch(r"[a-z][a-z0-9-]*", name) or name.startswith("stage-"):
            raise t._err("name", f"is {name!r}; use lower case letters, digits and -")
        if name in taken or name in {i.name for i in found}:
            raise t._err("name", f"{name!r} is already a variant's name")
        folder = t.text("folder", name)
        if "/" in folder or folder in ("service", "load", "..", "."):
            raise t._err("folder", f"is {folder!r}; name a folder beside service/")
        build = t.table("build")
        service = t.table("service")
        found.append(
            Implementation(
                name,
                folder,
                Build(build.commands("commands"), build.commands("test")),
                Service(service.command("command"), _ready(service, default_tcp=True), 120.0),
                _snapshots(t, has_load),
            )
        )
    return tuple(found)


def _ready(owner: _Table, default_tcp: bool) -> Ready:
    """`ready = { http = "/healthz" }`, `{ tcp = true }`, or none; `timeout_s` for either."""
    ready = owner.table("ready", required=False)
    http = ready.opt_str("http")
    tcp = ready.data.get("tcp", default_tcp and http is None)
    if not isinstance(tcp, bool):
        raise ready._err("tcp", "must be true or false")
    if http and tcp:
        raise ready._err("http/tcp", "give one probe, not both")
    return Ready(http, tcp, ready.num("timeout_s", 30))


def _bench(table: _Table) -> Bench | None:
    if not table.data:
        return None
    compare = table.command("compare") if "compare" in table.data else None
    return Bench(table.command("command"), compare)
