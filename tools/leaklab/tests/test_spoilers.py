"""No answer before the exercise: each lab's spoiler list (solutions/NN/answer.toml)
against its pre-exercise surfaces and against what `leaklab` prints for broken and mine.

`LEAKLAB_SPOILER_ROOT=/path/to/another/checkout` scans that checkout's surfaces with
this checkout's lists (how the course showed the test failing on an older commit).
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from rich.console import Console

from leaklab import report, spoilers
from leaklab.dataset import read
from leaklab.spec import lab_slugs, load_lab

LABS = lab_slugs()
ROOT = Path(os.environ["LEAKLAB_SPOILER_ROOT"]) if "LEAKLAB_SPOILER_ROOT" in os.environ else None


@pytest.mark.parametrize("slug", LABS)
def test_no_spoiler_on_a_pre_exercise_surface(slug: str) -> None:
    lab = load_lab(slug)
    assert lab.spoilers, f"solutions/{slug}/answer.toml lists no spoilers"
    hits = spoilers.find(lab, ROOT)
    assert not hits, f"{len(hits)} spoilers of {slug} before the exercise:\n" + "\n".join(
        map(str, hits)
    )


@pytest.mark.parametrize("slug", LABS)
def test_the_summary_of_a_broken_or_mine_run_names_no_fix(slug: str) -> None:
    """The table `leaklab run` prints, for the committed broken run and the same run
    called `mine`, holds no spoiler and no stage name of the solution."""
    lab = load_lab(slug)
    summary = report.summarise(lab, read(lab.dataset_dir / "broken.json"))
    mine = dataclasses.replace(summary, name="mine", variant="mine")
    with Path(os.devnull).open("w") as sink:
        console = Console(record=True, width=200, file=sink)
        for wide in (False, True):
            console.print(report.table(lab, [summary, mine], wide=wide))
    text = console.export_text()
    assert "broken" in text and "mine" in text
    named = spoilers.scan_text(text, [*lab.spoilers, *lab.stage_names], LABS)
    assert not named, f"{slug}: the run summary names {named}"


# ---------------------------------------------------------------- the scanner itself


def _lab_with(fake_repo: Path, words: list[str]) -> None:
    answer = fake_repo / "solutions" / "90-fake" / "answer.toml"
    answer.write_text(answer.read_text() + f"spoilers = {json.dumps(words)}\n")


def _where(fake_repo: Path) -> list[str]:
    return [f"{h.where} {h.phrase}" for h in spoilers.find(load_lab("90", fake_repo))]


def test_a_spoiler_is_named_with_its_file_and_line_on_every_surface(fake_repo: Path) -> None:
    _lab_with(fake_repo, ["keeps every body", "hoarded"])
    lab = fake_repo / "labs" / "90-fake"
    (fake_repo / "README.md").write_text(
        "# Course\nIt keeps every body, says the intro.\n<!-- leaklab:course-map -->\n"
        "| 90 | [Fake](labs/90-fake/README.md): it keeps every body |\n"
        "<!-- /leaklab:course-map -->\n"
    )
    (lab / "README.md").write_text(
        "# Lab\n\nSymptom: memory grows.\n\n## Exercise\nFind what is hoarded.\n"
        "<!-- leaklab:answer-below -->\nThe handler keeps every body: hoarded.\n"
    )
    (fake_repo / "slides").mkdir()
    (fake_repo / "slides" / "90-fake.md").write_text(
        "# Deck\n---\nwhat is hoarded?\n---\n<!-- leaklab:pause -->\n---\nhoarded\n"
    )
    (fake_repo / "notebooks").mkdir()
    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": ["# Measure\n", "the slope"]},
            {
                "cell_type": "code",
                "source": "print(x)",
                "outputs": [{"text": ["a\n", "hoarded 3\n"]}],
            },
        ]
    }
    (fake_repo / "notebooks" / "90-fake.ipynb").write_text(json.dumps(notebook))
    server = lab / "service" / "server.py"
    server.write_text(server.read_text() + "\nHOARDED = 1  # hoarded: keeps every body\n")
    last = len(server.read_text().splitlines())
    assert sorted(_where(fake_repo)) == sorted(
        [
            "README.md (course map):4 keeps every body",
            "labs/90-fake/README.md:6 hoarded",
            "notebooks/90-fake.ipynb:cell 1:3 hoarded",
            "slides/90-fake.md:3 hoarded",
            f"labs/90-fake/service/server.py:{last} hoarded",
            f"labs/90-fake/service/server.py:{last} keeps every body",
        ]
    )


def test_code_is_not_prose_and_words_are_whole(fake_repo: Path) -> None:
    """A source file's identifiers may name the bug (it is the bug); its comments may
    not. A spoiler matches whole words only, and a lab's folder name is not a sentence."""
    _lab_with(fake_repo, ["leaky thing", "fake"])
    service = fake_repo / "labs" / "90-fake" / "service"
    (service / "extra.py").write_text(
        'leaky_thing = "x"  # ok\nleaky = 1\n# a leaky thing\nunfaked = "labs/90-fake"\n'
    )
    (service / "notes.txt").write_text("a Leaky\n  Thing? no: a leaky thing\n")
    found = [w for w in _where(fake_repo) if "extra.py" in w or "notes.txt" in w]
    assert found == [
        "labs/90-fake/service/extra.py:3 leaky thing",
        "labs/90-fake/service/notes.txt:2 leaky thing",
    ]


def test_a_course_map_row_of_another_lab_is_that_labs_business(fake_repo: Path) -> None:
    _lab_with(fake_repo, ["unbounded"])
    (fake_repo / "README.md").write_text(
        "<!-- leaklab:course-map -->\n| 02 | [x](labs/02-rust-unbounded-channel/README.md) "
        "unbounded |\n| 90 | [Fake](labs/90-fake/README.md) unbounded |\n"
        "<!-- /leaklab:course-map -->\n"
    )
    (fake_repo / "labs" / "02-rust-unbounded-channel").mkdir()
    (fake_repo / "labs" / "02-rust-unbounded-channel" / "lab.toml").write_text("")
    assert [w for w in _where(fake_repo) if "course map" in w] == [
        "README.md (course map):3 unbounded"
    ]
