"""The devcontainer calls the same setup script as the README and CI, at a step a
Codespaces prebuild keeps, on the machine size the instructor guide promises, with the
project's own Python and JupyterLab."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
GUIDE = ROOT / "slides" / "INSTRUCTOR.md"
# What a prebuild keeps: the image, the features, and these two steps. postCreateCommand
# and later ones run in each attendee's codespace, on the day.
PREBUILT_STEPS = ("onCreateCommand", "updateContentCommand")
LATER_STEPS = ("postCreateCommand", "postStartCommand", "postAttachCommand")


def strip_jsonc(text: str) -> str:
    """Remove // and /* */ comments outside strings (devcontainer.json is JSON with comments)."""
    pattern = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.DOTALL)
    return pattern.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    parsed = json.loads(strip_jsonc((ROOT / ".devcontainer" / "devcontainer.json").read_text()))
    assert isinstance(parsed, dict)
    return parsed


def test_setup_runs_at_a_step_a_prebuild_keeps(config: dict[str, Any]) -> None:
    # The base only: VS Code connects without waiting for every lab's toolchain
    # (test_a_lab_s_toolchain_is_set_up_on_its_first_build covers the rest).
    assert config["onCreateCommand"] == "scripts/setup"
    assert config["waitFor"] == "onCreateCommand"
    for step in LATER_STEPS:
        assert "scripts/setup" not in str(config.get(step, "")), f"{step}: a prebuild drops it"
    assert (ROOT / "scripts" / "setup").stat().st_mode & 0o111, "scripts/setup is not executable"


def test_the_guide_describes_the_prebuild_the_file_configures(config: dict[str, Any]) -> None:
    guide = GUIDE.read_text()
    steps = [step for step in PREBUILT_STEPS if step in config]
    assert steps and all(f"`{step}`" in guide for step in steps), steps


def test_host_requirements_match_the_guide(config: dict[str, Any]) -> None:
    host = config["hostRequirements"]
    guide = " ".join(GUIDE.read_text().split())
    m = re.search(r"asks for (\d+) cores, (\d+) GB of memory and (\d+) GB of disk", guide)
    assert m, "the instructor guide no longer states the Codespace size"
    cores, memory, storage = m.groups()
    assert host == {"cpus": int(cores), "memory": f"{memory}gb", "storage": f"{storage}gb"}
    # The course's budgets: every figure measured on 2 cores, a run fits in 8 GB.
    assert host["cpus"] <= 2 and host["memory"] == "8gb"


def test_toolchains_without_a_second_jupyterlab(config: dict[str, Any]) -> None:
    features = config["features"]
    for runtime in ("python", "go", "rust", "java", "node"):
        assert any(f"/{runtime}:" in key for key in features), runtime
    python = next(opts for key, opts in features.items() if "/python:" in key)
    assert not python.get("installJupyterlab"), "JupyterLab comes from .venv (make jupyter)"


def test_vscode_uses_the_project_venv_and_runs_notebooks_in_their_folder(
    config: dict[str, Any],
) -> None:
    settings = config["customizations"]["vscode"]["settings"]
    venv_python = "${containerWorkspaceFolder}/.venv/bin/python"
    assert settings["python.defaultInterpreterPath"] == venv_python
    assert settings["jupyter.notebookFileRoot"] == "${fileDirname}"


def test_the_forwarded_port_is_the_one_make_jupyter_serves(config: dict[str, Any]) -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^jupyter:", makefile, re.M), "no `make jupyter` target"
    ports = config["forwardPorts"]
    assert ports == [8888] and "8888" in makefile


def test_readme_and_ci_use_the_same_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make demo" in readme and "make test" in readme
    assert ci.strip().splitlines()[-1] == "make test"
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo: setup", makefile, re.M) and re.search(r"^test: setup", makefile, re.M)


def test_a_lab_s_toolchain_is_set_up_on_its_first_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The devcontainer installs only the base: the harness runs `scripts/setup --lab NN`
    the first time a lab is built, once (its stamp), and not for a lab already set up."""
    from leaklab import build
    from leaklab.spec import load_lab

    root = tmp_path / "course"
    lab_dir = root / "labs" / "90-fake"
    lab_dir.mkdir(parents=True)
    (lab_dir / "lab.toml").write_text((ROOT / "tools/leaklab/tests/fakelab/lab.toml").read_text())
    (root / "scripts").mkdir()
    calls = root / "calls.txt"
    script = root / "scripts" / "setup"
    # a stand-in set-up that records its arguments and leaves the stamp, as the real one does
    script.write_text(
        f'#!/bin/sh\necho "$*" >> {calls}\nmkdir -p {root}/.leaklab/setup\n'
        f"touch {root}/.leaklab/setup/lab-$2\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("LEAKLAB_ROOT", str(root))
    lab = load_lab("90", root)
    build.ensure_toolchain(lab, log=lambda _: None)
    build.ensure_toolchain(lab, log=lambda _: None)
    assert calls.read_text() == "--lab 90\n"
