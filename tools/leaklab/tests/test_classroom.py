"""The shipped Classroom configuration grades labs that exist, with the real command."""

from __future__ import annotations

import json
import re
from pathlib import Path

from leaklab.spec import lab_slugs

ROOT = Path(__file__).resolve().parents[3]


def test_autograding_runs_leaklab_grade_on_existing_labs() -> None:
    config = json.loads((ROOT / ".github" / "classroom" / "autograding.json").read_text())
    numbers = {slug[:2] for slug in lab_slugs()}
    assert config["tests"], "no autograding tests"
    for test in config["tests"]:
        assert test["setup"] == "scripts/setup"
        match = re.fullmatch(r"\.venv/bin/leaklab grade (\d\d) --json grade-\1\.json", test["run"])
        assert match, test["run"]
        assert match.group(1) in numbers, f"lab {match.group(1)} does not exist"
        assert test["points"] > 0 and test["timeout"] >= 10


def test_example_workflow_calls_the_same_commands() -> None:
    workflow = (ROOT / "docs" / "classroom" / "classroom.yml").read_text()
    assert "run: scripts/setup" in workflow
    assert ".venv/bin/leaklab grade 01 --json grade-01.json" in workflow
