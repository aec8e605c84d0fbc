"""Content-hashed, cached builds: the same source and commands never build twice.

A build lives in `.leaklab/build/<slug>/<key>/` with `src/` (the materialised tree),
`out/` (what the build commands write) and `build.log`. The key hashes every source
file and the build commands, so a learner's edit gives a new key and an unchanged
variant reuses its binaries (a warm demo skips the compile entirely).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from leaklab import toolchains
from leaklab.base import IGNORED_NAMES, SHARED
from leaklab.errors import LeakLabError
from leaklab.paths import work_dir
from leaklab.procs import ProcessGroup
from leaklab.spec import Build, Command, Lab, fill
from leaklab.variants import materialise

DONE_MARKER = ".built"
# Records that the unit tests passed on a build: the test commands it was for.
TESTED_MARKER = ".tests-passed"
# The longest a build or test command may run: a cold Scala or Rust build on 2 cores
# fits, a deadlocked test does not hang the grader.
COMMAND_TIMEOUT_S = 900.0
# Copies of source trees leave build outputs and editor litter behind.
_ignored = shutil.ignore_patterns(*IGNORED_NAMES)


@dataclass(frozen=True)
class Built:
    """A finished build: where its source and outputs are, and whether it was cached."""

    key: str
    src: Path
    out: Path
    cached: bool


def tree_hash(tree: Path, extra: Iterable[str] = ()) -> str:
    """sha256 over every file's relative path and bytes, plus `extra` strings."""
    digest = hashlib.sha256()
    for item in extra:
        digest.update(item.encode() + b"\0")
    for path in sorted(p for p in tree.rglob("*") if p.is_file()):
        rel = path.relative_to(tree)
        if IGNORED_NAMES.intersection(rel.parts):
            continue
        digest.update(rel.as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def ensure_toolchain(lab: Lab, log: Callable[[str], None] = print) -> None:
    """Install the lab's toolchain the first time the lab is built (`scripts/setup
    --lab NN` leaves a stamp): the base set-up covers lab 01 only, so `make demo` on a
    fresh machine never waits for the JVM or Elixir."""
    script = lab.root / "scripts" / "setup"
    stamp = work_dir(lab.root) / "setup" / f"lab-{lab.number}"
    if stamp.exists() or not script.is_file():
        return
    log(
        f"first use of lab {lab.number}: installing its toolchain "
        f"(scripts/setup --lab {lab.number})"
    )
    with ProcessGroup() as group:
        # Its progress goes to stderr, beside the build log lines, never into a table.
        code = group.start([str(script), "--lab", lab.number], cwd=lab.root, stdout=2).wait()
    if code != 0:
        raise LeakLabError(
            f"scripts/setup --lab {lab.number} failed (exit {code}); its last line says why",
            "install what it names, then run the command again",
        )


def build_variant(
    lab: Lab,
    variant: str,
    log: Callable[[str], None] = print,
    course_tests: bool = False,
    extras: tuple[str, ...] = (),
) -> Built:
    """Materialise and build one variant of the lab's service (cached by content);
    `course_tests` puts the solution's tests in a learner's tree (a grade), `extras`
    adds the named extra steps of `[build.extras]`."""
    ensure_toolchain(lab, log)
    lab = lab.for_variant(variant)
    commands = lab.build.with_extras(extras)
    with tempfile.TemporaryDirectory(dir=_build_root(lab)) as tmp:
        src = Path(tmp) / "src"
        materialise(lab, variant, src, course_tests=course_tests)
        return _build_tree(lab, src, commands, f"{lab.slug} {variant}", log)


def variant_key(lab: Lab, variant: str, course_tests: bool = False) -> str:
    """The key `build_variant` would build this variant under, without building it: a
    recorded run names the build it measured, and this tells whether the tree it was
    built from is still the one the variant makes."""
    lab = lab.for_variant(variant)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        materialise(lab, variant, src, course_tests=course_tests)
        return _key(lab, src, lab.build.commands)


def build_tree(lab: Lab, src: Path, what: str, log: Callable[[str], None] = print) -> Built:
    """Build a source tree made by hand (e.g. broken with the solution's regression test
    copied in): it is moved into the cache like a variant's."""
    ensure_toolchain(lab, log)
    with tempfile.TemporaryDirectory(dir=_build_root(lab)) as tmp:
        staged = Path(tmp) / "src"  # the cache renames it in: same file system
        shutil.copytree(src, staged)
        return _build_tree(lab, staged, lab.build.commands, f"{lab.slug} {what}", log)


def build_load(lab: Lab, log: Callable[[str], None] = print) -> Built:
    """Build the lab's load program from `labs/NN/load` (not a variant: it never changes),
    beside the course's shared folders (`labs/loadkit`, the Go load kit its go.mod
    replaces with `../../loadkit`): the tree is laid out as `labs/` is, so the key
    hashes the kit too, and a change to the kit rebuilds every load."""
    ensure_toolchain(lab, log)
    with tempfile.TemporaryDirectory(dir=_build_root(lab)) as tmp:
        src = Path(tmp) / "src"
        load_dir = src / lab.slug / "load"
        if (lab.lab_dir / "load").is_dir():
            shutil.copytree(lab.lab_dir / "load", load_dir, ignore=_ignored)
        else:
            load_dir.mkdir(parents=True)
        for name in SHARED:
            shared = lab.files / "labs" / name
            if shared.is_dir():
                shutil.copytree(shared, src / name, ignore=_ignored)
        where = load_dir.relative_to(src)
        return _build_tree(lab, src, lab.load.build, f"{lab.slug} load", log, workdir=where)


def run_commands(
    commands: Iterable[Command],
    cwd: Path,
    values: dict[str, str],
    log_file: Path,
    timeout_s: float = COMMAND_TIMEOUT_S,
) -> None:
    """Run argv commands one after another, appending their output to `log_file`.

    Each command runs in its own process group, so a hung test binary (a learner's
    deadlock) is stopped with everything it started when it exceeds `timeout_s`, and
    so is everything on Ctrl-C."""
    with log_file.open("ab") as sink:
        for cmd in commands:
            argv = cmd.render(values)
            sink.write(f"$ {' '.join(argv)}\n".encode())
            sink.flush()
            # The pinned Go and the course's JDK (toolchains.py), below the command's own.
            env = os.environ | toolchains.env() | dict(cmd.env)
            if os.sep not in argv[0] and shutil.which(argv[0], path=env.get("PATH")) is None:
                raise LeakLabError(
                    f"{argv[0]} is not installed", "run scripts/setup, then leaklab doctor"
                )
            with ProcessGroup() as group:
                child = group.start(argv, cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT)
                try:
                    code = child.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    raise LeakLabError(
                        f"`{' '.join(argv)}` did not finish within {timeout_s:g} s "
                        f"(a deadlock?); last lines of {log_file}:\n{tail(log_file)}",
                        "run the command in the service folder to see where it hangs",
                    ) from None
            if code != 0:
                raise LeakLabError(
                    f"`{' '.join(argv)}` failed (exit {code}); "
                    f"last lines of {log_file}:\n{tail(log_file)}",
                    "fix the error above, then run again",
                )


def run_tests(
    lab: Lab,
    built: Built,
    log_file: Path,
    timeout_s: float = COMMAND_TIMEOUT_S,
    reuse_pass: bool = False,
) -> bool:
    """Run the lab's unit tests on a built variant; False when a recorded pass was reused.

    A build's key hashes every byte of its source, so a pass recorded on it holds for
    the same tree and test commands: with `reuse_pass` a grade of a tree whose tests
    already passed (the course check builds and tests every variant before grading
    broken and fixed) skips straight to the measurement. A failure is never recorded."""
    marker = built.src.parent / TESTED_MARKER
    commands = "\n".join(repr(c) for c in lab.build.test)
    with _exclusive(lab, built.key):
        if reuse_pass and marker.is_file() and marker.read_text() == commands:
            log_file.write_text(f"unit tests already passed on build {built.key}\n")
            return False
        marker.unlink(missing_ok=True)
        log_file.unlink(missing_ok=True)
        prepare_sources(lab.build, built.src)
        run_commands(
            lab.build.test, built.src, values(lab, built.src, built.out), log_file, timeout_s
        )
        marker.write_text(commands)
    return True


def tail(path: Path, lines: int = 15) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def values(lab: Lab, src: Path, out: Path) -> dict[str, str]:
    """The placeholders of build and test commands: the tree, the output folder, the
    tools scripts/setup fetched, the lab's shared cache, and the preset's own."""
    cache = _build_root(lab) / "cache"
    cache.mkdir(exist_ok=True)
    known = {"src": str(src), "out": str(out), "tools": tools_dir(lab), "cache": str(cache)}
    return known | {name: fill(v, known) for name, v in lab.build.values.items()}


def prepare_sources(build: Build, src: Path) -> None:
    """Give every source file the same new mtime when the toolchain decides freshness
    by mtimes over a shared cache (cargo; see presets.toml)."""
    if build.touch_sources:
        for path in src.rglob("*"):
            if path.is_file():
                os.utime(path)


def tools_dir(lab: Lab) -> str:
    """`{tools}`: the jars and binaries scripts/setup fetched (the sbt launcher, ap-loader)."""
    return str(work_dir(lab.root) / "tools")


def _build_root(lab: Lab) -> Path:
    root = work_dir(lab.root) / "build" / lab.slug
    root.mkdir(parents=True, exist_ok=True)
    return root


def _key(lab: Lab, src: Path, commands: tuple[Command, ...]) -> str:
    preset_values = [repr(sorted(lab.build.values.items()))] if lab.build.values else []
    return tree_hash(src, [repr(c) for c in commands] + preset_values)


def _build_tree(
    lab: Lab,
    src: Path,
    commands: tuple[Command, ...],
    what: str,
    log: Callable[[str], None],
    workdir: Path = Path(),
) -> Built:
    """Build `src` in the cache (by its key), running the commands in `src/workdir`
    (which is also their `{src}`); `Built.src` is the tree's root."""
    key = _key(lab, src, commands)
    home = _build_root(lab) / key
    out = home / "out"
    with _exclusive(lab, key):
        if (home / DONE_MARKER).exists():
            log(f"{what}: cached build {key}")
            return Built(key, home / "src", out, cached=True)
        if home.exists():
            shutil.rmtree(home)  # an earlier build of this key failed or was interrupted
        home.mkdir()
        src.rename(home / "src")
        out.mkdir()
        log(f"{what}: building {key} (log: {home / 'build.log'})")
        prepare_sources(lab.build, home / "src")
        cwd = home / "src" / workdir
        _start_from_last_build(lab, cwd)
        run_commands(commands, cwd, values(lab, cwd, out), home / "build.log")
        _keep_for_next_build(lab, cwd, key)
        (home / DONE_MARKER).touch()
    return Built(key, home / "src", out, cached=False)


def _seeds(lab: Lab) -> Path:
    return _build_root(lab) / "cache" / "seeds"


def _start_from_last_build(lab: Lab, tree: Path) -> None:
    """Copy the preset's `reuse_outputs` of the lab's last finished build into `tree`,
    so the toolchain recompiles only what differs. Best effort: a seed that cannot be
    read (none yet, or pruned while copied) leaves a build from scratch."""
    reuse = lab.build.reuse_outputs
    if not reuse or any((tree / rel).exists() for rel in reuse):
        return
    try:
        seed = _seeds(lab) / (_seeds(lab) / "latest").read_text().strip()
        for rel in reuse:
            if (seed / rel).is_dir():
                shutil.copytree(seed / rel, tree / rel, symlinks=True)
    except OSError:
        for rel in reuse:
            shutil.rmtree(tree / rel, ignore_errors=True)


def _keep_for_next_build(lab: Lab, tree: Path, key: str, keep: int = 3) -> None:
    """After a build: a copy of its `reuse_outputs` becomes the next build's start
    (`seeds/latest` names it, replaced atomically); older copies beyond `keep` go."""
    reuse = lab.build.reuse_outputs
    if not reuse:
        return
    seeds = _seeds(lab)
    staging = seeds / f".{key}.tmp"
    try:
        shutil.rmtree(staging, ignore_errors=True)
        for rel in reuse:
            if (tree / rel).is_dir():
                shutil.copytree(tree / rel, staging / rel, symlinks=True)
        shutil.rmtree(seeds / key, ignore_errors=True)
        staging.rename(seeds / key)
        pointer = seeds / f".latest.{key}"
        pointer.write_text(key)
        pointer.replace(seeds / "latest")
        kept = sorted(
            (p for p in seeds.iterdir() if p.is_dir() and not p.name.startswith(".")),
            key=lambda p: p.stat().st_mtime,
        )
        for old in kept[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)  # the next build starts from scratch


@contextlib.contextmanager
def _exclusive(lab: Lab, key: str) -> Iterator[None]:
    """One process at a time builds or tests a given build key (two terminals, or the
    test suite's parallel workers, would otherwise build into one folder or delete a
    build in progress as a failed one). Per lab instead when the toolchain shares a cache
    whose freshness is decided by mtimes (cargo; see presets.toml): a variant touched
    while another variant builds would later be taken for already built."""
    name = "cache" if lab.build.touch_sources else key
    with (_build_root(lab) / f"{name}.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        yield
