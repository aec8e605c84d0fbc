"""The devcontainer must call the same setup script as the README and CI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def strip_jsonc(text: str) -> str:
    """Remove // and /* */ comments outside strings (devcontainer.json is JSON with comments)."""
    pattern = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.DOTALL)
    return pattern.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)


@pytest.fixture(scope="module")
def config() -> dict[str, object]:
    parsed = json.loads(strip_jsonc((ROOT / ".devcontainer" / "devcontainer.json").read_text()))
    assert isinstance(parsed, dict)
    return parsed


def test_post_create_is_the_setup_script(config: dict[str, object]) -> None:
    assert config["postCreateCommand"] == "scripts/setup"
    assert (ROOT / "scripts" / "setup").stat().st_mode & 0o111, "scripts/setup is not executable"


def test_toolchains_and_host(config: dict[str, object]) -> None:
    features = config["features"]
    assert isinstance(features, dict)
    for runtime in ("python", "go", "rust", "java", "node"):
        assert any(f"/{runtime}:" in key for key in features), runtime
    assert config["hostRequirements"] == {"cpus": 4, "memory": "8gb"}
    assert 8888 in config["forwardPorts"]  # type: ignore[operator]


def test_readme_and_ci_use_the_same_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make demo" in readme and "make test" in readme
    assert ci.strip().splitlines()[-1] == "make test"
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo: setup", makefile, re.M) and re.search(r"^test: setup", makefile, re.M)
