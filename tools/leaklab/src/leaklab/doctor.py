"""`leaklab doctor`: is this machine ready for the course? One line per check, with the fix.

Besides the toolchains and the machine, it says which labs are ready to run and why the
others are not. A lab's needs are read from its `lab.toml` (the programs its build,
load, service, aux and snapshot commands start, and the `{tools}/...` files they name),
so a new lab, or a load program rewritten in another language, is checked without an
edit here. It also stops what a harness killed with SIGKILL left running.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import psutil
from rich.markup import escape

from leaklab import toolchains
from leaklab.errors import LeakLabError
from leaklab.paths import work_dir
from leaklab.procs import free_port, ledger_folder, reap
from leaklab.spec import SPLAT, Build, Command, Lab, lab_slugs, load_lab

GIB = 1024**3
TOOLS_FILE = re.compile(r"\{tools\}/([\w.+-]+)")


@dataclass(frozen=True)
class Finding:
    """One readiness check: what, whether it passed, what was seen, and the fix."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True


@dataclass(frozen=True)
class Tool:
    """A command-line tool the course needs, with the minimum version and how to get it.

    `provides` names the other programs that come with it (the JDK's jcmd, Elixir's mix):
    a lab that starts one of them needs this tool."""

    name: str
    argv: tuple[str, ...]
    minimum: tuple[int, ...]
    fix: str
    required: bool = True
    provides: tuple[str, ...] = ()

    @property
    def programs(self) -> tuple[str, ...]:
        return (Path(self.argv[0]).name, *self.provides)


JDK_FIX = "install JDK 25 (Temurin 25; or set JAVA_HOME to one), then scripts/setup-jvm"
TOOLS = (
    Tool("git", ("git", "--version"), (2, 30), "apt-get install git"),
    Tool("python3", ("python3", "--version"), (3, 11), "install Python 3.11+ (pyenv or apt)"),
    Tool("uv", ("uv", "--version"), (0, 4), "pip install uv (scripts/setup does this)"),
    # `go version` runs with the harness's GOTOOLCHAIN, so it reports the Go the labs use.
    Tool(
        "go",
        ("go", "version"),
        (1, 27, 3),
        f"install Go 1.21+ (go.dev/dl), then scripts/setup selects {toolchains.GO_TOOLCHAIN}",
        required=False,
    ),
    Tool("cargo", ("cargo", "--version"), (1, 80), "install Rust with rustup", required=False),
    # `java` runs with the harness's PATH: JAVA_HOME's or setup-jvm's JDK first.
    Tool(
        "java",
        ("java", "-version"),
        (toolchains.JAVA_MAJOR,),
        JDK_FIX,
        required=False,
        provides=("jcmd", "jfr"),
    ),
    Tool(
        "elixir",
        ("elixir", "-e", "IO.puts(System.version())"),
        (1, 14),
        "scripts/setup-elixir (apt: elixir, erlang-dev, erlang-cowlib, erlang-jiffy)",
        required=False,
        provides=("mix", "erl", "iex"),
    ),
    Tool("node", ("node", "--version"), (22,), "install Node.js 22+ (slides)", required=False),
    Tool(
        "chromium",
        ("chromium", "--version"),
        (100,),
        "apt-get install chromium (only for the slides as PDF)",
        required=False,
    ),
)
# Files scripts/setup fetches into .leaklab/tools/ ({tools} in lab.toml), by name prefix.
TOOL_FILE_FIXES = {"sbt-launch": "scripts/setup-jvm", "ap-loader": "scripts/setup-jvm"}


def version_of(argv: tuple[str, ...]) -> tuple[tuple[int, ...], str] | None:
    env = os.environ | toolchains.env()  # what the harness's own commands see
    if shutil.which(argv[0], path=env.get("PATH")) is None:
        return None
    try:
        result = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (result.stdout + result.stderr).strip()
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not match:
        return (0,), text
    return tuple(int(g) for g in match.groups() if g is not None), text.splitlines()[0]


def tool_check(tool: Tool) -> Finding:
    found = version_of(tool.argv)
    if found is None:
        return Finding(tool.name, False, "not found", tool.fix, tool.required)
    version, text = found
    ok = version >= tool.minimum
    want = ".".join(map(str, tool.minimum))
    return Finding(
        tool.name, ok, text if ok else f"{text} (need >= {want})", tool.fix, tool.required
    )


def install_hint(program: str) -> str:
    """How to install the tool that provides `program` (for errors that name it)."""
    for tool in TOOLS:
        if program in tool.programs:
            return tool.fix
    return f"install {program} (your system's package manager)"


def machine_checks(root: Path) -> list[Finding]:
    cpus = os.cpu_count() or 1
    mem = psutil.virtual_memory()
    disk = shutil.disk_usage(root)
    try:
        port = free_port()
        loopback = Finding("loopback", True, f"can bind 127.0.0.1 (e.g. port {port})")
    except OSError as exc:
        loopback = Finding("loopback", False, str(exc), "the labs need a loopback interface")
    return [
        Finding("cores", cpus >= 2, f"{cpus}", "the budgets assume 2 or more cores"),
        Finding(
            "memory",
            mem.available >= 3 * GIB,
            f"{mem.available / GIB:.1f} GiB available",
            "close other programs: a lab run needs up to 1.5 GB, Jupyter more",
        ),
        Finding(
            "disk",
            disk.free >= 5 * GIB,
            f"{disk.free / GIB:.0f} GiB free",
            "free 5 GiB for toolchain caches and builds",
        ),
        loopback,
        Finding(
            "venv",
            (root / ".venv" / "bin" / "python").exists(),
            str(root / ".venv"),
            "run scripts/setup",
        ),
    ]


def local_tool(tool: Tool, root: Path) -> Tool:
    """scripts/setup installs uv into .leaklab/uv when the machine has none on PATH."""
    local = root / ".leaklab" / tool.name / "bin" / tool.name
    if shutil.which(tool.argv[0]) is None and local.exists():
        return replace(tool, argv=(str(local), *tool.argv[1:]))
    return tool


def lab_needs(lab: Lab) -> dict[str, list[str]]:
    """What a lab starts, by name: programs (`go`) and `{tools}/` files (`tools/x.jar`),
    each with the steps that need it (build, test, load, service, aux, snapshot; an
    implementation's steps are prefixed with its name, e.g. `tokio build`)."""
    steps: list[tuple[str, Iterable[Command]]] = [
        ("build", _with_preset(lab.build)),
        ("test", _with_preset(lab.build, test=True)),
        ("service", [_spelt(lab.service.command, lab.params)]),
        ("load", [*lab.load.build, *([lab.load.command] if lab.load.command.argv else [])]),
        ("aux", [a.command for a in lab.aux]),
        ("snapshot", [s.command for s in lab.snapshots if s.command]),
    ]
    for impl in lab.implementations:
        steps += [
            (f"{impl.name} build", [*_with_preset(impl.build), *_with_preset(impl.build, True)]),
            (f"{impl.name} service", [impl.service.command]),
        ]
    needs: dict[str, list[str]] = {}
    for step, commands in steps:
        for cmd in commands:
            for name in _named(cmd):
                if step not in needs.setdefault(name, []):
                    needs[name].append(step)
    return needs


def _with_preset(build: Build, test: bool = False) -> list[Command]:
    """A build's commands with the preset's `{*name}` argv values spelt out (`{*sbt}`
    is `java ... -jar {tools}/sbt-launch.jar`), so what they start can be named."""
    return [_spelt(cmd, build.values) for cmd in (build.test if test else build.commands)]


def _spelt(cmd: Command, values: dict[str, str]) -> Command:
    """`cmd` with its `{*name}` arguments split out of `values` (a preset's, or a run
    parameter such as lab 04's `launcher`, empty by default); unknown ones stay."""
    argv: list[str] = []
    for arg in cmd.argv:
        splat = SPLAT.fullmatch(arg)
        known = splat and splat.group(1) in values
        argv.extend(shlex.split(values[splat.group(1)]) if splat and known else [arg])
    return Command(tuple(argv), cmd.env)


def _named(cmd: Command) -> list[str]:
    """The program a command starts (unless the build wrote it) and the tools files it names."""
    found = [f"tools/{m}" for arg in cmd.argv for m in TOOLS_FILE.findall(arg)]
    if not cmd.argv[0].startswith("{"):
        found.insert(0, cmd.argv[0])
    return found


def lab_check(lab: Lab, available: dict[str, bool]) -> Finding:
    """Whether `lab` can be built and run here: every program and file it needs exists.

    A need only an implementation has (lab 05's `tokio` needs cargo) is reported but does
    not make the lab unready: broken, its stages and fixed run without it."""
    missing = {name: steps for name, steps in lab_needs(lab).items() if not available[name]}
    blocking = {n: s for n, s in missing.items() if any(" " not in step for step in s)}
    parts = [f"{name} ({', '.join(steps)})" for name, steps in missing.items()]
    fixes = dict.fromkeys(_fix_for(name) for name in missing)
    if blocking:
        detail = "not ready: needs " + ", ".join(parts)
    elif missing:
        detail = "ready; also needs " + ", ".join(parts)
    else:
        detail = "ready"
    return Finding(f"lab {lab.number}", not blocking, f"{lab.slug}: {detail}", "; ".join(fixes))


def _fix_for(name: str) -> str:
    if name.startswith("tools/"):
        file = name.removeprefix("tools/")
        how = next((f for p, f in TOOL_FILE_FIXES.items() if file.startswith(p)), "scripts/setup")
        return f"{how} (fetches .leaklab/{name})"
    return install_hint(name)


def _available(names: Iterable[str], tools: dict[str, Finding], root: Path) -> dict[str, bool]:
    """Whether each program or tools file is there. For a doctor tool and the programs it
    provides, the tool's own check decides too (a too old go counts as missing)."""
    out: dict[str, bool] = {}
    for name in names:
        tool = next((t for t in TOOLS if name in t.programs), None)
        if name.startswith("tools/"):
            out[name] = (work_dir(root) / name).is_file()
        elif tool is None:
            out[name] = shutil.which(name) is not None
        elif name == tool.programs[0]:
            out[name] = tools[tool.name].ok  # found on PATH or in .leaklab, new enough
        else:
            # jcmd and jfr from the JDK the harness puts first on PATH (toolchains.py)
            path = (os.environ | toolchains.env()).get("PATH")
            out[name] = tools[tool.name].ok and shutil.which(name, path=path) is not None
    return out


def _labs(root: Path) -> list[Lab]:
    labs = []
    for slug in lab_slugs(root):
        try:
            labs.append(load_lab(slug, root))
        except LeakLabError:
            continue  # a broken lab.toml is reported by the commands that read it
    return labs


def readiness_checks(root: Path, labs: list[Lab], tools: dict[str, Finding]) -> list[Finding]:
    """The tools files the labs need, then one line per lab: ready, or what is missing."""
    needs = {lab.number: lab_needs(lab) for lab in labs}
    names = {name for lab_need in needs.values() for name in lab_need}
    available = _available(names, tools, root)
    files = sorted(n for n in names if n.startswith("tools/"))
    file_checks = [
        Finding(
            Path(name).name,
            available[name],
            f".leaklab/{name} ({_labs_using(name, needs)})"
            if available[name]
            else f"missing: .leaklab/{name} ({_labs_using(name, needs)})",
            _fix_for(name),
        )
        for name in files
    ]
    return [*file_checks, *(lab_check(lab, available) for lab in labs)]


def _labs_using(name: str, needs: dict[str, dict[str, list[str]]]) -> str:
    numbers = [number for number, need in needs.items() if name in need]
    return f"lab{'s' if len(numbers) > 1 else ''} {_ranges(numbers)}"


def _ranges(numbers: list[str]) -> str:
    """`['01', '03', '04', '05']` -> `01, 03-05` (two in a row stay `04, 05`)."""
    runs: list[list[str]] = []
    for n in numbers:
        if runs and n.isdigit() and runs[-1][-1].isdigit() and int(n) == int(runs[-1][-1]) + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(r) for r in runs)


def tool_checks(root: Path, labs: list[Lab]) -> list[Finding]:
    """One check per tool; a tool some lab needs is required, and its fix names the labs."""
    needs = {lab.number: lab_needs(lab) for lab in labs}
    checks = []
    for tool in TOOLS:
        using = [n for n, need in needs.items() if any(p in need for p in tool.programs)]
        check = tool_check(local_tool(tool, root))
        if using:
            labs_text = f"lab{'s' if len(using) > 1 else ''} {_ranges(using)}"
            check = replace(check, required=True, fix=f"{check.fix} (needed by {labs_text})")
        checks.append(check)
    return checks


def leftovers_check(root: Path) -> Finding:
    """Stop what a harness killed with SIGKILL left running (its pid files say what)."""
    reaped = reap(ledger_folder(root))
    if not reaped:
        return Finding("leftovers", True, "no process left by a killed run")
    return Finding(
        "leftovers",
        True,
        f"stopped {len(reaped)} process group(s) a killed run left: {'; '.join(reaped)}",
    )


def run_checks(root: Path) -> list[Finding]:
    labs = _labs(root)
    tools = tool_checks(root, labs)
    readiness = readiness_checks(root, labs, {c.name: c for c in tools})
    return [*tools, *machine_checks(root), *readiness, leftovers_check(root)]


def lines(checks: list[Finding]) -> list[str]:
    """The checks as rich markup lines, columns aligned by their visible text: the
    padding goes inside the markup, so `[green]ok[/green]` lines up with `optional`."""
    marks = [
        ("ok", "green") if c.ok else ("FAIL", "red") if c.required else ("optional", "yellow")
        for c in checks
    ]
    mark_width = max((len(m) for m, _ in marks), default=0)
    name_width = max((len(c.name) for c in checks), default=0)
    out = []
    for c, (mark, colour) in zip(checks, marks, strict=True):
        fix = "" if c.ok or not c.fix else f"  -> {c.fix}"
        out.append(
            f"[{colour}]{mark:>{mark_width}}[/{colour}]  "
            f"{escape(f'{c.name:<{name_width}}')}  {escape(c.detail + fix)}"
        )
    return out
