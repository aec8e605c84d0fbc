"""The shared load kit (`labs/loadkit`): every load is built beside it, a change to it
rebuilds the loads, and a grade builds the published load with the published kit."""

from __future__ import annotations

from pathlib import Path

from conftest import publish, quiet

from leaklab import base, dev
from leaklab.build import build_load
from leaklab.grading.grade import ignored_changes, published_lab
from leaklab.spec import lab_slugs, load_lab

# The fake load's build reads the kit where a Go load's `replace ../../loadkit` points.
BUILD = (
    'build = [["python3", "-c", "import shutil, sys; shutil.copy(\'load.py\', sys.argv[1]); '
    'shutil.copy(\'../../loadkit/kit.txt\', sys.argv[2])", "{out}/load.py", "{out}/kit.txt"]]'
)


def test_a_load_is_built_with_the_kit_and_a_grade_with_the_published_one(fake_repo: Path) -> None:
    kit = fake_repo / "labs" / "loadkit" / "kit.txt"
    kit.parent.mkdir()
    kit.write_text("v1\n")
    toml = fake_repo / "labs" / "90-fake" / "lab.toml"
    lines = toml.read_text().splitlines()
    at = lines.index("[load]") + 1
    toml.write_text("\n".join([*lines[:at], BUILD, *lines[at + 1 :], ""]))
    publish(fake_repo, "a load built with the kit")
    assert lab_slugs(fake_repo) == ["90-fake"], "the kit is not a lab"
    assert base.read_shared(fake_repo)["loadkit"], "the lock records the kit"

    lab = load_lab("90", fake_repo)
    first = build_load(lab, quiet)
    assert (first.out / "kit.txt").read_text() == "v1\n"

    kit.write_text("v2\n")  # a maintainer's edit, not locked yet
    second = build_load(lab, quiet)
    assert second.key != first.key and (second.out / "kit.txt").read_text() == "v2\n"
    assert any("labs/loadkit" in p for p in dev._lock_problems(fake_repo))

    published = published_lab(lab)
    graded = build_load(published, quiet)
    assert graded.key == first.key and (graded.out / "kit.txt").read_text() == "v1\n"
    assert ignored_changes(published, "mine") == ["labs/loadkit/kit.txt"]

    publish(fake_repo, "the kit's edit, locked")
    assert dev._lock_problems(fake_repo) == []
