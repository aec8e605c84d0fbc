from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from leaklab import hints
from leaklab.errors import LeakLabError
from leaklab.spec import fill, lab_slugs, load_lab, parse_lab


def test_loads_by_number_or_slug(fake_repo: Path) -> None:
    by_number = load_lab("90", fake_repo)
    by_slug = load_lab("90-fake", fake_repo)
    assert by_number == by_slug
    assert by_number.variants == ["broken", "fixed"]
    assert by_number.samplers[0].series == {"held_bytes": "held.bytes"}
    assert by_number.versions == {"python": ("python3", "--version")}


def test_unknown_lab_names_the_choices(fake_repo: Path) -> None:
    with pytest.raises(LeakLabError, match="unknown lab '42'") as info:
        load_lab("42", fake_repo)
    assert info.value.fix is not None and "90-fake" in info.value.fix


def _rewrite(root: Path, old: str, new: str) -> None:
    path = root / "labs" / "90-fake" / "lab.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("[build]", "[build", "not valid TOML"),
        ("[build]", '[build]\npreset = "gradle"', "preset is 'gradle'; known: cargo, go, mix, sbt"),
        ('kind = "http_json"', 'kind = "carrier-pigeon"', "invalid enum value 'carrier-pigeon'"),
        ('verdict_series = "held_bytes"', 'verdict_series = "nope"', "must be one of"),
        ('slug = "90-fake"', 'slug = "91-other"', "but the folder is"),
        ("interval_s = 0.2", "interval_s = -1", r"interval_s: expected `float` >= 0"),
        ("[lab]", "format_version = 9\n[lab]", "format_version: expected `int` <= 1"),
        (
            "[service]",
            '[[grade.checks]]\nname = "x"\nmeasure = "load.ok"\nof = "solution"\n'
            "at_least = 0.9\nat_most = 2\n[service]",
            r"\[grade.checks\[0\]\] at_least/at_most give exactly one",
        ),
        (
            "[service]",
            '[[grade.checks]]\nname = "x"\nmeasure = "nope.ok"\nof = "solution"\n'
            "at_least = 1\n[service]",
            "measure is 'nope.ok'; use load.<name>",
        ),
        (
            "[service]",
            '[[grade.checks]]\nname = "x"\nmeasure = "load.ok"\n[service]',
            r"\[grade.checks\[0\]\] needs the key 'of'",
        ),
        ('name = "stats.json"\nhttp = "/stats"', 'name = "stats.json"', "exactly one of"),
    ],
)
def test_broken_lab_toml_gives_one_clear_error(
    fake_repo: Path, old: str, new: str, message: str
) -> None:
    _rewrite(fake_repo, old, new)
    with pytest.raises(LeakLabError, match=message) as info:
        load_lab("90", fake_repo)
    assert "lab.toml" in str(info.value)


def test_unknown_placeholder_is_a_clear_error() -> None:
    assert fill("{port}/x", {"port": "80"}) == "80/x"
    with pytest.raises(LeakLabError, match=r"unknown placeholder \{prot\}"):
        fill("{prot}", {"port": "80"})


@pytest.mark.parametrize("slug", lab_slugs())
def test_a_misspelt_key_in_any_course_lab_names_the_key(slug: str, tmp_path: Path) -> None:
    """A misspelt key would silently leave a default in force; it is an error instead,
    naming the file, the key and the closest key that exists."""
    real = load_lab(slug).lab_dir / "lab.toml"
    copy = tmp_path / "labs" / slug / "lab.toml"
    copy.parent.mkdir(parents=True)
    for old, new, bad, near in (
        ("flat_below =", "flat_bellow =", "flat_bellow", "flat_below"),
        ("[service]", "[service]\nmax_sec = 5", "max_sec", "max_s"),
    ):
        copy.write_text(real.read_text().replace(old, new, 1))
        with pytest.raises(LeakLabError, match=f"unknown key '{bad}'") as info:
            parse_lab(copy, tmp_path)
        assert str(copy) in info.value.what and near in str(info.value.fix)


def _answer(root: Path, extra: str) -> None:
    """Append to the fake lab's answer.toml (solutions/90-fake/answer.toml)."""
    path = root / "solutions" / "90-fake" / "answer.toml"
    path.write_text(path.read_text() + extra)


def test_hints_come_one_at_a_time_from_the_answer(fake_repo: Path) -> None:
    _answer(fake_repo, 'hints = ["look", "closer"]\n')
    lab = load_lab("90", fake_repo)
    first, second = hints.show(lab), hints.show(lab)
    assert (first.number, first.text, second.number, second.text) == (1, "look", 2, "closer")
    assert "hint 2" in first.next_step and "last hint" in second.next_step
    assert hints.show(lab, 1).text == "look"  # any hint again, by number


def test_past_the_last_hint_is_one_clear_line_and_exit_2(fake_repo: Path) -> None:
    _answer(fake_repo, 'hints = ["look"]\n')
    lab = load_lab("90", fake_repo)
    with pytest.raises(LeakLabError, match="hints 1 to 1; there is no hint 2"):
        hints.show(lab, 2)
    hints.show(lab)
    with pytest.raises(LeakLabError, match="you have seen them all"):
        hints.show(lab)
    env = {**os.environ, "LEAKLAB_ROOT": str(fake_repo)}
    cli = [sys.executable, "-m", "leaklab", "hint", "90"]
    done = subprocess.run([*cli, "3"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert done.stderr.strip().splitlines() == [
        "error: lab 90 has hints 1 to 1; there is no hint 3"
    ]


def test_lab_toml_holds_no_hint_and_the_answer_no_unknown_key(fake_repo: Path) -> None:
    """The answer's keys are refused in lab.toml (a learner reads it for the standard
    load), and a misspelt key in answer.toml is named like one in lab.toml."""
    _rewrite(fake_repo, 'story = "test fixture"', 'story = "test fixture"\nhints = ["look"]')
    with pytest.raises(LeakLabError, match="unknown key 'hints'"):
        load_lab("90", fake_repo)
    _rewrite(fake_repo, 'story = "test fixture"\nhints = ["look"]', 'story = "test fixture"')
    _answer(fake_repo, 'spoiler = ["held"]\n')
    with pytest.raises(LeakLabError, match=r"answer\.toml: has an unknown key 'spoiler'") as info:
        load_lab("90", fake_repo)
    assert info.value.fix == "did you mean 'spoilers'?"


def test_the_readme_sends_the_learner_to_leaklab_hint_and_shows_no_hint(fake_repo: Path) -> None:
    _answer(fake_repo, 'hints = ["look at what the handler keeps"]\n')
    readme = fake_repo / "labs" / "90-fake" / "README.md"
    readme.write_text("Stuck? `leaklab hint 90` gives one hint at a time.\n")
    assert hints.problems(load_lab("90", fake_repo)) == []
    readme.write_text("<details><summary>Hint 1</summary>look at what the\nhandler keeps</details>")
    found = hints.problems(load_lab("90", fake_repo))
    assert len(found) == 2 and "leaklab hint" in found[0] and "shows hint 1" in found[1]


def test_the_course_labs_parse() -> None:
    slugs = lab_slugs()
    assert slugs, "the repository has no labs"
    for slug in slugs:
        lab = load_lab(slug)
        assert lab.slug == slug
        for patch in lab.patches:
            assert (lab.solution_dir / patch).is_file(), f"{slug}: missing {patch}"
