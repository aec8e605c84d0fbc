"""One pinned toolchain per runtime, named the same everywhere it is set (go.mod files,
the set-up scripts, make, CI, the devcontainer and the harness), and the harness's own
commands run on it even from a shell that selects another Go."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from test_devcontainer import strip_jsonc

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


def workflow_steps(name: str = "ci.yml") -> list[dict[str, object]]:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


def step_with(action: str) -> dict[str, str]:
    found = [s for s in workflow_steps() if str(s.get("uses", "")).startswith(f"{action}@")]
    assert len(found) == 1, f"ci.yml: one {action} step"
    with_ = found[0].get("with", {})
    assert isinstance(with_, dict)
    return {k: str(v) for k, v in with_.items()}


def devcontainer_features() -> dict[str, dict[str, str]]:
    text = (ROOT / ".devcontainer" / "devcontainer.json").read_text()
    features = json.loads(strip_jsonc(text))["features"]
    return {key.split("/")[-1].split(":")[0]: opts for key, opts in features.items()}


def test_ci_and_the_devcontainer_install_the_same_toolchains() -> None:
    features = devcontainer_features()
    assert step_with("actions/setup-go")["go-version"] == GO.removeprefix("go")
    assert features["go"]["version"] == GO.removeprefix("go")
    java = step_with("actions/setup-java")
    assert java["java-version"] == features["java"]["version"] == str(toolchains.JAVA_MAJOR)
    assert java["distribution"] == "temurin" and features["java"]["jdkDistro"] == "tem"
    node = step_with("actions/setup-node")["node-version"]
    assert node == features["node"]["version"] and int(node) >= 22
    # Debian's own Python: the feature would otherwise compile CPython from source
    assert features["python"] == {"version": "os-provided", "installTools": False}
    # the students' grading workflow builds with the same Go and JDK as CI
    grading = [s for s in workflow_steps("grade.yml") if s.get("uses")]
    for action, key in (("actions/setup-go", "go-version"), ("actions/setup-java", "java-version")):
        pinned = {str(s["with"][key]) for s in grading if str(s["uses"]).startswith(f"{action}@")}  # type: ignore[index]
        assert pinned == {step_with(action)[key]}, (action, pinned)


def test_ci_uses_current_action_majors_and_no_unpinned_third_party_action() -> None:
    majors = {"checkout": 7, "setup-python": 7, "setup-go": 6, "setup-java": 6, "setup-node": 7}
    majors |= {"cache": 6, "upload-artifact": 7}
    for step in workflow_steps() + workflow_steps("grade.yml"):
        uses = str(step.get("uses", ""))
        if not uses:
            continue
        owner_name, ref = uses.split("@")
        owner, name = owner_name.split("/", 1)
        if owner == "actions":
            assert int(ref.removeprefix("v")) >= majors[name.split("/")[0]], uses
        else:  # a third party's action: only by full commit id
            assert re.fullmatch(r"[0-9a-f]{40}", ref), f"{uses}: pin a third-party action by SHA"


def test_the_jvm_labs_share_one_scala_and_sbt() -> None:
    builds = sorted(ROOT.glob("labs/*/*/build.sbt"))
    scalas = {re.search(r'scalaVersion := "([^"]+)"', b.read_text()).group(1) for b in builds}  # type: ignore[union-attr]
    assert len(builds) >= 3 and len(scalas) == 1 and scalas.pop().startswith("3.3."), scalas
    sbts = {p.read_text().strip() for p in ROOT.glob("labs/*/*/project/build.properties")}
    assert len(sbts) == 1, sbts
    sbt = sbts.pop().removeprefix("sbt.version=")
    assert f"SBT_VERSION={sbt}\n" in (ROOT / "scripts" / "setup-jvm").read_text()
    assert f"sbt-launch-{sbt}.jar" in (ROOT / "tools/leaklab/src/leaklab/presets.toml").read_text()


def test_logback_is_past_its_cves() -> None:
    """CVE-2025-11226 and CVE-2026-1225 are fixed from logback 1.5.25."""
    for build in ROOT.glob("labs/*/*/build.sbt"):
        for version in re.findall(r'"logback-classic" % "([\d.]+)"', build.read_text()):
            assert tuple(map(int, version.split("."))) >= (1, 5, 25), (build, version)


def test_the_harness_puts_the_course_jdk_first(tmp_path: Path) -> None:
    """JAVA_HOME when set, else the JDK scripts/setup-jvm linked as .leaklab/tools/jdk."""
    jdk = tmp_path / ".leaklab" / "tools" / "jdk"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "bin" / "java").write_text("")
    env = toolchains.env({"PATH": "/usr/bin"}, root=tmp_path)
    assert env["PATH"] == f"{jdk / 'bin'}:/usr/bin"
    other = tmp_path / "other-jdk"
    (other / "bin").mkdir(parents=True)
    (other / "bin" / "java").write_text("")
    env = toolchains.env({"PATH": "/usr/bin", "JAVA_HOME": str(other)}, root=tmp_path)
    assert env["PATH"] == f"{other / 'bin'}:/usr/bin"
    assert "PATH" not in toolchains.env({"PATH": "/usr/bin"}, root=tmp_path / "none")


def say_hi(stdout: int, extra_env: dict[str, str]) -> None:
    lib = ROOT / "scripts" / "lib.sh"
    env = {"PATH": "/usr/bin:/bin", **extra_env}
    subprocess.run(
        ["bash", "-c", f'. "{lib}"; SCRIPT=setup; say hi'], stdout=stdout, env=env, check=True
    )


@pytest.mark.parametrize(
    ("tty", "no_color", "styled"), [(True, False, True), (True, True, False), (False, False, False)]
)
def test_setup_output_is_coloured_only_on_a_terminal_without_no_color(
    tty: bool, no_color: bool, styled: bool
) -> None:
    extra = {"NO_COLOR": "1"} if no_color else {}
    if tty:
        leader, follower = pty.openpty()
        say_hi(follower, extra)
        os.close(follower)
        out = os.read(leader, 1024).decode()
        os.close(leader)
    else:
        read, write = os.pipe()
        say_hi(write, extra)
        os.close(write)
        out = os.read(read, 1024).decode()
        os.close(read)
    assert ("\x1b[" in out) == styled, repr(out)
    assert out.replace("\x1b[1m", "").replace("\x1b[0m", "").strip() == "setup: hi"


def test_base_only_make_targets_run_the_set_up_only_when_its_inputs_changed(
    tmp_path: Path,
) -> None:
    """`make compare` (run, grade, diff, ...) checks the base set-up's stamp instead of
    running scripts/setup every time; a newer uv.lock (or script) runs it again."""
    inputs = ["Makefile", "scripts/setup", "scripts/lib.sh"]
    inputs += ["tools/leaklab/pyproject.toml", "tools/leaklab/uv.lock"]
    for rel in inputs:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes((ROOT / rel).read_bytes())
    stamp = tmp_path / ".leaklab" / "setup" / "base"
    stamp.parent.mkdir(parents=True)
    stamp.touch()
    os.utime(stamp, (2e9, 2e9))  # newer than every input

    def dry_run(target: str) -> str:
        argv = ["make", "-n", target, "LAB=01"]
        return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True).stdout

    for target in ("run", "compare", "grade", "diff", "doctor"):
        assert "scripts/setup" not in dry_run(target), target
    os.utime(tmp_path / "tools/leaklab/uv.lock", (2e9 + 1, 2e9 + 1))
    assert "scripts/setup" in dry_run("compare")
    assert 'touch "$STAMPS/base"' in (ROOT / "scripts" / "setup").read_text()
