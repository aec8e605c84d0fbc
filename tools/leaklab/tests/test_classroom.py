"""The GitHub workflows match the course: CI has a job for every lab and one for the
harness, and together they select every test once; the grade workflow grades a push's
changed labs, a job each, with the published grader, saving its caches and reporting
whatever the outcome; and every course command either workflow runs exists here.
(GitHub Classroom, which this file once checked, was retired on 2026-08-28.)"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from _pytest.mark import KeywordMatcher
from _pytest.mark.expression import Expression

from leaklab.cli import app
from leaklab.spec import lab_slugs

ROOT = Path(__file__).resolve().parents[3]
WORKFLOWS = ROOT / ".github" / "workflows"
LABS = lab_slugs()
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def workflow(name: str) -> dict[str, Any]:
    parsed = yaml.safe_load((WORKFLOWS / name).read_text())
    assert isinstance(parsed, dict), name
    return parsed


def steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return list(job["steps"])


def number(slug: str) -> str:
    return slug.split("-", 1)[0]


# ---------------------------------------------------------------- CI


def ci_matrix() -> list[dict[str, str]]:
    (job,) = workflow("ci.yml")["jobs"].values()
    include = job["strategy"]["matrix"]["include"]
    assert isinstance(include, list)
    return include


def selects(
    tests: str, path: str, names: AbstractSet[str], marks: AbstractSet[str] = frozenset()
) -> bool:
    """Whether pytest, given `tests` (paths, -k, -m) from the repository root, runs an
    item in file `path` whose keyword names are `names`: pytest's own -k and -m logic."""
    args = shlex.split(tests)
    keyword = args[args.index("-k") + 1] if "-k" in args else None
    marker = args[args.index("-m") + 1] if "-m" in args else None
    paths = [
        a for i, a in enumerate(args) if not a.startswith("-") and args[i - 1] not in {"-k", "-m"}
    ]
    if not any(path == p or path.startswith(p.rstrip("/") + "/") for p in paths):
        return False
    keywords = KeywordMatcher(frozenset({Path(path).name, *names, *marks}))
    if keyword and not Expression.compile(keyword).evaluate(keywords):
        return False
    return not marker or Expression.compile(marker).evaluate(lambda m, **_: m in marks)


COURSE = "tools/leaklab/tests/test_course.py"


def course_item(slug: str) -> set[str]:
    """A per-lab course test as pytest names it: the lab slug in the parameter id."""
    return {"test_variant_builds_and_passes_its_unit_tests", f"test_x[{slug}-broken]"}


def test_ci_has_a_job_per_lab_that_runs_that_labs_tests() -> None:
    matrix = ci_matrix()
    for slug in LABS:
        jobs = [e for e in matrix if e["setup"] == f"--lab {number(slug)}"]
        assert len(jobs) == 1, f"{slug}: no CI job (scripts/setup --lab {number(slug)})"
        tests = jobs[0]["tests"]
        assert selects(tests, COURSE, course_item(slug)), f"{slug}: its job misses its tests"
        for other in set(LABS) - {slug}:
            assert not selects(tests, COURSE, course_item(other)), f"{slug}'s job runs {other}"


def test_ci_harness_job_runs_everything_the_lab_jobs_do_not() -> None:
    harness = [e for e in ci_matrix() if e["setup"] == "--all"]
    assert len(harness) == 1, "no harness job (scripts/setup --all)"
    tests = harness[0]["tests"]
    for slug in LABS:
        assert not selects(tests, COURSE, course_item(slug)), f"harness repeats {slug}"
    # A course test that is not per lab (leak-marked), and a harness test whose id
    # carries a lab slug (a deck named like its lab), both belong to the harness job.
    assert selects(tests, COURSE, {"test_the_readme_demo_command_runs"}, {"leak"})
    deck = {f"test_every_deck_builds_to_html[{LABS[0]}]"}
    assert selects(tests, "tools/leaklab/tests/test_slides.py", deck)
    assert selects(tests, "tools/leaklab/tests/test_analysis.py", {"test_fit"})


def test_the_selection_logic_can_tell() -> None:
    """The helper above is pytest's -k: a job that names no lab selects none."""
    assert not selects(f"{COURSE} -k nothing", COURSE, course_item(LABS[0]))
    assert not selects(f"tools/leaklab/tests/test_x.py -k {LABS[0]}", COURSE, course_item(LABS[0]))
    assert not selects(f"{COURSE} -m 'not leak'", COURSE, {"t"}, {"leak"})


# ---------------------------------------------------------------- Classroom


def grade_workflow() -> dict[str, Any]:
    return workflow("grade.yml")


def test_no_retired_classroom_piece_is_left() -> None:
    """GitHub Classroom was retired on 2026-08-28: its workflow, its actions and its
    docs are gone, and no workflow uses an action of classroom-resources."""
    assert not (WORKFLOWS / "classroom.yml").exists()
    assert not (ROOT / "docs" / "classroom").exists()
    for path in WORKFLOWS.glob("*.yml"):
        assert "classroom-resources/" not in path.read_text(), path.name


def test_grade_runs_on_the_runner_ci_validates() -> None:
    """The grade and CI run on one pinned image: a moving `ubuntu-latest` would grade
    lab 03 on an OTP CI never ran (review M4)."""
    ci_runners = {job["runs-on"] for job in workflow("ci.yml")["jobs"].values()}
    grade_runners = {job["runs-on"] for job in grade_workflow()["jobs"].values()}
    assert ci_runners == grade_runners == {"ubuntu-24.04"}


def test_grade_has_a_job_per_changed_lab_with_a_timeout_for_each() -> None:
    jobs = grade_workflow()["jobs"]
    grade = jobs["grade"]
    assert grade["needs"] == "changed"
    assert grade["strategy"]["matrix"]["lab"] == "${{ fromJSON(needs.changed.outputs.labs) }}"
    assert grade["strategy"]["fail-fast"] is False
    timeouts = re.search(r"fromJSON\('(\{.*?\})'\)\[matrix\.lab\]", grade["timeout-minutes"])
    assert timeouts, grade["timeout-minutes"]
    minutes = {k: int(v) for k, v in yaml.safe_load(timeouts.group(1)).items()}
    assert sorted(minutes) == sorted(number(s) for s in LABS)
    assert all(0 < m <= 60 for m in minutes.values())
    assert jobs["changed"]["timeout-minutes"] <= 5


def test_grade_checks_out_the_history_that_holds_the_published_commit() -> None:
    for job in grade_workflow()["jobs"].values():
        checkout = [s for s in steps(job) if s.get("uses", "").startswith("actions/checkout@")]
        assert checkout and checkout[0].get("with", {}).get("fetch-depth") == 0


def test_grade_saves_its_caches_whatever_the_grade() -> None:
    """C1: a cache saved only on success is never saved while a lab fails."""
    job = grade_workflow()["jobs"]["grade"]
    uses = [s.get("uses", "") for s in steps(job)]
    assert not any(u.startswith("actions/cache@") for u in uses), "saves on success only"
    restore = next(s for s in steps(job) if s.get("uses", "").startswith("actions/cache/restore@"))
    save = next(s for s in steps(job) if s.get("uses", "").startswith("actions/cache/save@"))
    assert save["if"].startswith("always()")
    assert save["with"]["path"] == restore["with"]["path"]
    assert "steps.cache.outputs.cache-primary-key" in save["with"]["key"]
    grade_at = next(i for i, s in enumerate(steps(job)) if s.get("name") == "grade")
    assert uses.index(save["uses"]) > grade_at > uses.index(restore["uses"])


def test_grade_reports_whatever_the_grade() -> None:
    """Summary, commit status and upload run after a failed grade too."""
    job = grade_workflow()["jobs"]["grade"]
    after = steps(job)[next(i for i, s in enumerate(steps(job)) if s.get("name") == "grade") + 1 :]
    names = {s.get("name") for s in after}
    assert {"job summary", "commit status", "upload the result and its plot"} <= names
    assert all(s.get("if", "").startswith("always()") for s in after)
    assert job["permissions"]["statuses"] == "write"
    status = next(s for s in after if s.get("name") == "commit status")
    assert "/statuses/$GITHUB_SHA" in status["run"]


def test_grade_uses_the_published_grader() -> None:
    """M3: the harness, scripts and labs/base.toml of the course's commit grade, and the
    grade is told that commit (it lists the learner's edits to them as ignored)."""
    job = grade_workflow()["jobs"]["grade"]
    runs = [s.get("run", "") for s in steps(job)]
    restore = next(i for i, r in enumerate(runs) if 'git checkout "$COURSE" --' in r)
    setup = next(i for i, r in enumerate(runs) if r.startswith("scripts/setup"))
    grade = next(i for i, r in enumerate(runs) if "leaklab grade" in r)
    assert restore < setup < grade
    for path in ("tools", "scripts", "labs/base.toml"):
        assert f" {path}" in runs[restore]
    assert '--course "$COURSE"' in runs[grade]


def test_run_steps_take_values_from_the_environment_not_expressions() -> None:
    """An expression pasted into a script is shell injection waiting for a branch name;
    and the test that runs these steps as Actions would can run them as they are."""
    for job in grade_workflow()["jobs"].values():
        for step in steps(job):
            assert "${{" not in step.get("run", ""), step.get("name")


# ---------------------------------------------------------------- commands


def commands() -> Iterator[tuple[str, str]]:
    """(where, command line) for every run/command/setup-command in both workflows, with
    CI's matrix values filled in."""
    for name in ("ci.yml", "grade.yml"):
        for job_name, job in workflow(name)["jobs"].items():
            matrix = job.get("strategy", {}).get("matrix", {}).get("include", [{}])
            for entry in matrix:
                for step in steps(job):
                    texts = [step.get("run")]
                    texts += [step.get("with", {}).get(k) for k in ("command", "setup-command")]
                    for text in filter(None, texts):
                        filled = EXPRESSION.sub(lambda m, e=entry: fill(m.group(1), e), text)
                        for line in filled.splitlines():
                            for part in re.split(r"&&|\|\||;", line):
                                part = part.strip()
                                # grade.yml's own shell (git, jq, gh) is run by the
                                # test that runs its steps; here: the course's programs.
                                ours = part.startswith((".venv/bin/", "scripts/", "make "))
                                if part and (name == "ci.yml" or ours):
                                    yield f"{name}:{job_name}", part


def fill(expression: str, entry: dict[str, str]) -> str:
    key = expression.removeprefix("matrix.")
    assert key != expression and key in entry, f"unexpected ${{{{ {expression} }}}} in a command"
    return entry[key]


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z0-9_.-]+):", text, re.M))


def venv_programs() -> set[str]:
    """What `.venv/bin` holds that the project declares: its scripts, its dev tools."""
    project = tomllib.loads((ROOT / "tools" / "leaklab" / "pyproject.toml").read_text())["project"]
    dev = {re.split(r"[<>=\[ ]", d)[0].lower() for d in project["optional-dependencies"]["dev"]}
    return {*project["scripts"], *dev, "python", "python3"}


def check_leaklab(argv: list[str]) -> None:
    """`leaklab <command> [<subcommand>] [options]` names commands and options the CLI has."""
    command = typer.main.get_command(app)
    words = ["leaklab"]
    while hasattr(command, "commands") and argv:
        name, argv = argv[0], argv[1:]
        words.append(name)
        command = command.commands.get(name)
        assert command is not None, f"`{' '.join(words)}` is not a command"
    options = {opt for param in command.params for opt in param.opts}
    for arg in argv:
        if arg.startswith("-"):
            assert arg.split("=")[0] in options, f"`{' '.join(words)}` has no {arg}"
    labs = [a for a in argv if re.fullmatch(r"\d\d", a)]
    assert all(lab in {number(s) for s in LABS} for lab in labs), f"no lab {labs}"


def check_command(line: str) -> None:
    argv = shlex.split(line)
    program = argv[0]
    if program == "make":
        missing = {a for a in argv[1:] if not a.startswith("-") and "=" not in a} - make_targets()
        assert not missing, f"`{line}`: no Make target {sorted(missing)}"
    elif program.startswith("scripts/"):
        path = ROOT / program
        assert path.is_file() and path.stat().st_mode & 0o111, f"`{line}`: no executable {program}"
    elif program.startswith(".venv/bin/"):
        name = program.removeprefix(".venv/bin/")
        assert name in venv_programs(), f"`{line}`: {name} is not the project's program"
        if name == "leaklab":
            check_leaklab(argv[1:])
        for arg in argv[1:]:
            if arg.startswith("tools/"):
                assert (ROOT / arg.split("::")[0]).exists(), f"`{line}`: no {arg}"
    else:
        pytest.fail(f"`{line}`: not a script, a Make target or a .venv/bin program of the repo")


def test_every_workflow_command_exists() -> None:
    seen = list(commands())
    assert len(seen) >= 2 * len(LABS), "no commands found: did the workflows move?"
    for where, line in seen:
        try:
            check_command(line)
        except AssertionError as exc:
            raise AssertionError(f"{where}: {exc}") from exc


@pytest.mark.parametrize(
    "line",
    [
        "make no-such-target",
        "scripts/no-such-script",
        ".venv/bin/leaklab no-such-command 01",
        ".venv/bin/leaklab dev no-such-check",
        ".venv/bin/leaklab grade 01 --no-such-option",
        ".venv/bin/leaklab grade 42",
        ".venv/bin/not-ours",
        ".venv/bin/pytest tools/leaklab/tests/no_such_test.py",
        "curl example.invalid | sh",
    ],
)
def test_a_missing_command_is_caught(line: str) -> None:
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        check_command(line)
