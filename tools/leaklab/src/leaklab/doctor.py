"""`leaklab doctor`: is this machine ready for the course? One line per check, with the fix."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psutil

from leaklab.procs import free_port

GIB = 1024**3


@dataclass(frozen=True)
class Check:
    """One readiness check: what, whether it passed, what was seen, and the fix."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True


@dataclass(frozen=True)
class Tool:
    """A command-line tool the course needs, with the minimum version and how to get it."""

    name: str
    argv: tuple[str, ...]
    minimum: tuple[int, ...]
    fix: str
    required: bool = True


TOOLS = (
    Tool("git", ("git", "--version"), (2, 30), "apt-get install git"),
    Tool("python3", ("python3", "--version"), (3, 11), "install Python 3.11+ (pyenv or apt)"),
    Tool("uv", ("uv", "--version"), (0, 4), "pip install uv (scripts/setup does this)"),
    Tool("go", ("go", "version"), (1, 24), "install Go 1.24+ from go.dev/dl (lab 01)"),
    Tool(
        "cargo",
        ("cargo", "--version"),
        (1, 80),
        "install Rust with rustup (lab 02, 05)",
        required=False,
    ),
    Tool(
        "java",
        ("java", "-version"),
        (17,),
        "apt-get install openjdk-17-jdk (labs 04, 05)",
        required=False,
    ),
    Tool(
        "elixir",
        ("elixir", "-e", "IO.puts(System.version())"),
        (1, 14),
        "scripts/setup-elixir (apt: elixir, erlang-dev, erlang-cowlib, erlang-jiffy; lab 03)",
        required=False,
    ),
    Tool("node", ("node", "--version"), (18,), "install Node.js 18+ (slides)", required=False),
    Tool(
        "chromium",
        ("chromium", "--version"),
        (100,),
        "apt-get install chromium (only for the slides as PDF)",
        required=False,
    ),
)


def version_of(argv: tuple[str, ...]) -> tuple[tuple[int, ...], str] | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (result.stdout + result.stderr).strip()
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not match:
        return (0,), text
    return tuple(int(g) for g in match.groups() if g is not None), text.splitlines()[0]


def tool_check(tool: Tool) -> Check:
    found = version_of(tool.argv)
    if found is None:
        return Check(tool.name, False, "not found", tool.fix, tool.required)
    version, text = found
    ok = version >= tool.minimum
    want = ".".join(map(str, tool.minimum))
    return Check(tool.name, ok, text if ok else f"{text} (need >= {want})", tool.fix, tool.required)


def machine_checks(root: Path) -> list[Check]:
    cpus = os.cpu_count() or 1
    mem = psutil.virtual_memory()
    disk = shutil.disk_usage(root)
    try:
        port = free_port()
        loopback = Check("loopback", True, f"can bind 127.0.0.1 (e.g. port {port})")
    except OSError as exc:
        loopback = Check("loopback", False, str(exc), "the labs need a loopback interface")
    return [
        Check("cores", cpus >= 2, f"{cpus}", "the budgets assume 2 or more cores"),
        Check(
            "memory",
            mem.available >= 3 * GIB,
            f"{mem.available / GIB:.1f} GiB available",
            "close other programs: a lab run needs up to 1.5 GB, Jupyter more",
        ),
        Check(
            "disk",
            disk.free >= 5 * GIB,
            f"{disk.free / GIB:.0f} GiB free",
            "free 5 GiB for toolchain caches and builds",
        ),
        loopback,
        Check(
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
        return Tool(tool.name, (str(local), *tool.argv[1:]), tool.minimum, tool.fix, tool.required)
    return tool


def run_checks(root: Path) -> list[Check]:
    return [*(tool_check(local_tool(t, root)) for t in TOOLS), *machine_checks(root)]
