"""`lab.toml`, with its answer beside the solution: a lab, parsed and validated with
clear errors.

Everything runtime-specific (how to build a Go binary, which JSON field is the heap)
lives in the lab's `lab.toml`; the harness core only knows argv lists, placeholders
and a few generic sampler kinds. What belongs to the answer (hints, the solution's
patches, stage names and regression tests, the grade's hint, the spoiler list) is read
from `solutions/NN-slug/answer.toml` (`manifest.AnswerFile`), never from `lab.toml`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

from leaklab import manifest, presets
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
    # Placeholders the toolchain's preset adds (`{*sbt}`: how to start sbt).
    values: dict[str, str] = field(default_factory=dict)
    # Give every source file a new mtime before building: a toolchain that decides
    # freshness by mtimes (cargo) and shares its cache between variants would otherwise
    # reuse another variant's code (see `leaklab.presets`).
    touch_sources: bool = False
    # Output folders a build starts from, copied from the lab's last finished build, so
    # the toolchain compiles only what differs (sbt's target folders; `leaklab.build`).
    reuse_outputs: tuple[str, ...] = ()
    extras: dict[str, tuple[Command, ...]] = field(default_factory=dict)

    def with_extras(self, names: tuple[str, ...]) -> tuple[Command, ...]:
        """The build commands plus the named extra steps (`--with`), in that order."""
        unknown = [n for n in names if n not in self.extras]
        if unknown:
            known = ", ".join(self.extras) or "none"
            raise LeakLabError(f"no build extra named {', '.join(unknown)}", f"known: {known}")
        return self.commands + tuple(c for n in names for c in self.extras[n])


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
    # An adaptive run looks at the verdict every this many seconds of steady window.
    look_every_s: float = 10.0


MEASURE_KINDS = ("load", "last", "peak", "median")
BOUNDS = ("at_least", "at_most")


@dataclass(frozen=True)
class GradeCheck:
    """One `[[grade.checks]]`: `measure` must be at least (or at most) `factor` x `of`."""

    name: str
    measure: str
    bound: str  # one of BOUNDS
    factor: float
    of: str


@dataclass(frozen=True)
class GradeSpec:
    """`[grade]`: what a fix must also keep doing, beyond a flat verdict."""

    hint: str = ""
    checks: tuple[GradeCheck, ...] = ()
    duration_s: float | None = None  # shorter than the standard run, same rate and mix
    # MB/min: a flat verdict fails when the harness's own RSS slope has its lower bound
    # above this (the verdict series and the process disagree).
    rss_grows_above: float | None = None


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
    grade: GradeSpec = GradeSpec()
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
    # The exercise's hint ladder, in order (`leaklab hint NN`; answer.toml).
    hints: tuple[str, ...] = ()
    # Words and phrases that give the answer away (answer.toml; `leaklab.spoilers`).
    spoilers: tuple[str, ...] = ()
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
    """Parse `labs/NN/lab.toml` (typed by `leaklab.manifest`, then the rules that relate
    one key to another); `source` is the folder it sits in when that is not `root`."""
    doc = manifest.read(path)
    fail = _Failer(path)
    info = doc.lab
    if info.slug != path.parent.name:
        raise fail("lab", "slug", f"is {info.slug!r} but the folder is {path.parent.name!r}")
    answer_path = answer_file(path.parent.parent.parent, info.slug)
    answer = manifest.read_answer(answer_path)
    has_load = doc.load is not None
    return Lab(
        number=info.slug.split("-", 1)[0],
        slug=info.slug,
        title=info.title,
        runtime=info.runtime,
        seed=info.seed,
        story=info.story,
        root=root,
        **_stages(answer, _Failer(answer_path)),
        build=_build(doc.build, fail, "build"),
        service=Service(
            _command(doc.service.command, doc.service.env),
            # A listening service is probed by TCP unless told otherwise; a self-driving
            # one is not probed unless its lab.toml asks.
            _ready(doc.service.ready, has_load, fail, "service.ready"),
            doc.service.max_s,
        ),
        load=_load(doc.load),
        samplers=tuple(_sampler(s, has_load, fail, i) for i, s in enumerate(doc.samplers)),
        snapshots=_snapshots(doc.snapshots, has_load, fail, "snapshots"),
        analysis=_analysis(doc.analysis, fail),
        sample_interval_s=doc.run.sample_interval_s,
        pre_load_s=doc.run.pre_load_s,
        idle_s=doc.run.idle_s,
        versions=dict(info.versions),
        bench=_bench(doc.bench),
        grade=_grade(doc.grade, answer.grade.hint, fail),
        aux=_aux(doc.aux, fail),
        extra_params=_params(doc.params),
        self_driving=not has_load,
        implementations=_implementations(doc.implementations, has_load, fail),
        editable=_inside(info.editable, fail, "editable", folders=True),
        fixtures=_inside(info.fixtures, fail, "fixtures", folders=False),
        course_tests=info.course_tests or COURSE_TESTS.get(info.runtime, ()),
        hints=answer.hints,
        spoilers=answer.spoilers,
        regression_tests=answer.regression_tests,
        source=source,
    )


class _Failer:
    """Errors about one lab.toml, in the manifest's words: file, table, key, problem."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self, table: str, key: str, problem: str) -> LeakLabError:
        return LeakLabError(
            f"{self.path}: {f'[{table}] ' if table else ''}{key} {problem}".replace(" ]", "]"),
            "see tools/leaklab/src/leaklab/manifest.py for the lab.toml schema",
        )


def _command(argv: tuple[str, ...], env: dict[str, str]) -> Command:
    return Command(tuple(argv), dict(env))


def _params(params: dict[str, str | int | float]) -> dict[str, str]:
    return {name: str(value) for name, value in params.items()}


def answer_file(files: Path, slug: str) -> Path:
    """Where a lab's answer lives: `solutions/<slug>/answer.toml` beside its patches."""
    return files / "solutions" / slug / "answer.toml"


def _stages(answer: manifest.AnswerFile, fail: _Failer) -> dict[str, tuple[str, ...]]:
    names = answer.stage_names if answer.stage_names is not None else answer.patches
    if len(names) != len(answer.patches):
        raise fail("", "stage_names", "must name each patch once")
    return {"patches": answer.patches, "stage_names": names}


def _build(build: manifest.Build, fail: _Failer, table: str) -> Build:
    """A `[build]`: the lab's own commands, or its toolchain preset's."""
    preset = presets.find(build.preset) if build.preset else presets.NONE
    if preset is None:
        raise fail(table, "preset", f"is {build.preset!r}; known: {', '.join(presets.names())}")
    commands = build.commands if build.commands is not None else preset.commands
    tests = build.test if build.test is not None else preset.test
    env = dict(build.env)
    return Build(
        tuple(Command(tuple(a), env) for a in commands),
        tuple(Command(tuple(a), env) for a in tests),
        values=preset.values,
        touch_sources=preset.touch_sources,
        reuse_outputs=preset.reuse_outputs,
        extras={
            name: tuple(Command(tuple(a), env) for a in steps)
            for name, steps in build.extras.items()
        },
    )


def _load(load: manifest.Load | None) -> Load:
    if load is None:  # self-driving: the service is its own load
        return Load((), Command(()), {}, 0.0)
    env = dict(load.env)
    return Load(
        tuple(Command(tuple(a), env) for a in load.build),
        _command(load.command, env),
        _params(load.params),
        load.grace_s,
    )


def _sampler(s: manifest.Sampler, has_load: bool, fail: _Failer, i: int) -> Sampler:
    if s.kind == "http_json" and not has_load:
        raise fail(f"samplers[{i}]", "kind", "http_json needs a service that listens ([load])")
    return Sampler(s.kind, dict(s.series), s.interval_s, s.path, s.time_field)


def _analysis(a: manifest.Analysis, fail: _Failer) -> Analysis:
    verdict = a.verdict_series or a.series[0]
    if verdict not in a.series:
        raise fail("analysis", "verdict_series", f"must be one of {list(a.series)}")
    return Analysis(a.warmup_s, a.series, verdict, a.grows_above, a.flat_below, a.look_every_s)


def _grade(g: manifest.Grade, hint: str, fail: _Failer) -> GradeSpec:
    checks = []
    for i, c in enumerate(g.checks):
        where = f"grade.checks[{i}]"
        bounds = [
            (b, v) for b, v in (("at_least", c.at_least), ("at_most", c.at_most)) if v is not None
        ]
        if len(bounds) != 1:
            raise fail(where, "at_least/at_most", "give exactly one of the two")
        for key, measure in (("measure", c.measure), ("of", c.of)):
            kind = measure.partition(".")[0]
            if kind not in MEASURE_KINDS and not (key == "of" and measure == "solution"):
                kinds = ", ".join(k + ".<name>" for k in MEASURE_KINDS)
                raise fail(where, key, f"is {measure!r}; use {kinds} (or 'solution' in of)")
        checks.append(GradeCheck(c.name, c.measure, bounds[0][0], bounds[0][1], c.of))
    return GradeSpec(hint, tuple(checks), g.duration_s, g.rss_grows_above)


def _inside(paths: tuple[str, ...], fail: _Failer, key: str, folders: bool) -> tuple[str, ...]:
    """Paths a learner may edit (`service` or below) or fixtures (files below it)."""
    for item in paths:
        below = item.startswith("service/") or (folders and item == "service")
        if not below or ".." in item.split("/"):
            raise fail("lab", key, f"has {item!r}; name service/ or a path inside it")
    return paths


def _snapshots(
    items: tuple[manifest.Snapshot, ...], has_load: bool, fail: _Failer, table: str
) -> tuple[Snapshot, ...]:
    out = []
    for i, s in enumerate(items):
        if (s.http is None) == (s.command is None):
            raise fail(f"{table}[{i}]", "http/command", "exactly one of the two must be given")
        if s.http is not None and not has_load:
            raise fail(f"{table}[{i}]", "http", "needs a service that listens ([load])")
        command = _command(s.command, s.env) if s.command else None
        out.append(Snapshot(s.name, s.http, command, s.timeout_s))
    return tuple(out)


def _aux(items: tuple[manifest.Aux, ...], fail: _Failer) -> tuple[Aux, ...]:
    out: list[Aux] = []
    for i, a in enumerate(items):
        if not re.fullmatch(r"[a-z][a-z0-9_]*", a.name) or a.name in ("service", "load"):
            raise fail(f"aux[{i}]", "name", f"is {a.name!r}; use lower case letters, digits, _")
        if a.name in {x.name for x in out}:
            raise fail(f"aux[{i}]", "name", f"{a.name!r} is used twice")
        ready = _ready(a.ready, False, fail, f"aux[{i}].ready")
        out.append(Aux(a.name, _command(a.command, a.env), ready))
    return tuple(out)


def _implementations(
    items: tuple[manifest.Implementation, ...], has_load: bool, fail: _Failer
) -> tuple[Implementation, ...]:
    found: list[Implementation] = []
    taken = {"broken", "fixed", "mine"}
    for i, t in enumerate(items):
        where = f"implementations[{i}]"
        if not has_load:
            raise fail(where, "", "needs a service that listens (a [load] section)")
        if not re.fullmatch(r"[a-z][a-z0-9-]*", t.name) or t.name.startswith("stage-"):
            raise fail(where, "name", f"is {t.name!r}; use lower case letters, digits and -")
        if t.name in taken | {x.name for x in found}:
            raise fail(where, "name", f"{t.name!r} is already a variant's name")
        folder = t.folder or t.name
        if "/" in folder or folder in ("service", "load", "..", "."):
            raise fail(where, "folder", f"is {folder!r}; name a folder beside service/")
        ready = _ready(t.service.ready, True, fail, f"{where}.service.ready")
        service = Service(_command(t.service.command, t.service.env), ready, 120.0)
        build = _build(t.build, fail, f"{where}.build")
        snapshots = _snapshots(t.snapshots, has_load, fail, f"{where}.snapshots")
        found.append(Implementation(t.name, folder, build, service, snapshots))
    return tuple(found)


def _ready(ready: manifest.Ready, default_tcp: bool, fail: _Failer, table: str) -> Ready:
    """`ready = { http = "/healthz" }`, `{ tcp = true }`, or none; `timeout_s` for either."""
    tcp = ready.tcp if ready.tcp is not None else default_tcp and ready.http is None
    if ready.http and tcp:
        raise fail(table, "http/tcp", "give one probe, not both")
    return Ready(ready.http, tcp, ready.timeout_s)


def _bench(bench: manifest.Bench | None) -> Bench | None:
    if bench is None:
        return None
    compare = _command(bench.compare, {}) if bench.compare else None
    return Bench(_command(bench.command, {}), compare)
