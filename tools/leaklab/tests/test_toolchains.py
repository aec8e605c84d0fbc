"""One pinned toolchain per runtime, named the same everywhere it is set (go.mod files,
the set-up scripts, make, CI, the devcontainer and the harness), and the harness's own
commands run on it even from a shell that selects another Go."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from leaklab import toolchains
from leaklab.build import run_commands
from leaklab.spec import Command

ROOT = Path(__file__).resolve().parents[3]
GO = toolchains.GO_TOOLCHAIN  # go1.27.3
GO_LANGUAGE = ".".join(GO.removeprefix("go").split(".")[:2])  # 1.27


def go_mods() -> list[Path]:
    mods = [*sorted(ROOT.glob("labs/*/*/go.mod")), ROOT / "labs" / "loadkit" / "go.mod"]
    assert len(mods) >= 6, mods
    return mods


@pytest.mark.parametrize("mod", go_mods(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_go_module_names_the_pinned_go(mod: Path) -> None:
    text = mod.read_text()
    assert re.search(rf"^go {re.escape(GO_LANGUAGE)}$", text, re.M), (
        f"{mod}: not `go {GO_LANGUAGE}`"
    )
    assert re.search(rf"^toolchain {re.escape(GO)}$", text, re.M), f"{mod}: no `toolchain {GO}`"


def test_the_scripts_make_and_ci_select_the_pinned_go() -> None:
    lib = (ROOT / "scripts" / "lib.sh").read_text()
    assert f"LEAKLAB_GO_TOOLCHAIN={GO}\n" in lib
    for script in ("setup", "setup-jvm", "setup-elixir", "setup-slides"):
        assert '. "$ROOT/scripts/lib.sh"' in (ROOT / "scripts" / script).read_text(), script
    assert f"export GOTOOLCHAIN := {GO}" in (ROOT / "Makefile").read_text()
    assert f"export GOTOOLCHAIN={GO}" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize(
    ("user", "seen"),
    [
        (None, GO),
        ("local", GO),
        ("auto", GO),
        ("go1.26.8", "go1.26.8"),
        ("go1.28.0+auto", "go1.28.0+auto"),
    ],
)
def test_harness_commands_run_on_the_pinned_go_unless_the_user_named_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, user: str | None, seen: str
) -> None:
    if user is None:
        monkeypatch.delenv("GOTOOLCHAIN", raising=False)
    else:
        monkeypatch.setenv("GOTOOLCHAIN", user)
    log = tmp_path / "build.log"
    run_commands([Command(("sh", "-c", "echo GOTOOLCHAIN=$GOTOOLCHAIN"))], tmp_path, {}, log)
    assert f"GOTOOLCHAIN={seen}\n" in log.read_text()


def test_a_command_s_own_environment_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOTOOLCHAIN", raising=False)
    log = tmp_path / "build.log"
    command = Command(("sh", "-c", "echo GOTOOLCHAIN=$GOTOOLCHAIN"), {"GOTOOLCHAIN": "local"})
    run_commands([command], tmp_path, {}, log)
    assert "GOTOOLCHAIN=local\n" in log.read_text()
