"""The published lab is found by content: a learner's commits, a squashed template copy
or a missing record never turn `broken` into the learner's code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, publish

from leaklab import base, dev
from leaklab.errors import LeakLabError
from leaklab.grading import diff
from leaklab.spec import load_lab
from leaklab.variants import materialise

LEAK = "HELD.append(body)"


def squashed_copy(root: Path, dest: Path) -> Path:
    """What GitHub's "Use this template" makes: the same files, one new commit."""
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns(".git", ".leaklab"))
    git(dest, "init", "-q")
    git(dest, "add", ".")
    git(dest, "commit", "-q", "-m", "Initial commit")
    return dest


def commit_a_fix(root: Path) -> None:
    server = root / "labs" / "90-fake" / "service" / "server.py"
    server.write_text(server.read_text().replace(LEAK, "pass  # my fix"))
    git(root, "commit", "-qam", "my fix")


def test_broken_stays_published_after_a_commit_in_a_squashed_copy(
    fake_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    student = squashed_copy(fake_repo, tmp_path / "student")
    monkeypatch.setenv("LEAKLAB_ROOT", str(student))
    commit_a_fix(student)
    lab = load_lab("90", student)
    materialise(lab, "broken", tmp_path / "broken")
    materialise(lab, "mine", tmp_path / "mine")
    materialise(lab, "fixed", tmp_path / "fixed")
    assert LEAK in (tmp_path / "broken" / "server.py").read_text()
    assert "my fix" in (tmp_path / "mine" / "server.py").read_text()
    fixed = (tmp_path / "fixed" / "server.py").read_text()
    assert "nothing is kept" in fixed and "my fix" not in fixed  # the solution, not stacked
    removed = [line for line in diff.learner_diff(lab).splitlines() if line.startswith("-")]
    assert any(LEAK in line for line in removed), "the diff is against the published code"


def test_only_the_editable_folders_come_from_the_learner(fake_repo: Path, tmp_path: Path) -> None:
    """A lab that lets a learner edit one folder of its service takes the rest (a fake
    peer, a sampler) from the published lab, whatever the learner wrote there."""
    service = fake_repo / "labs" / "90-fake" / "service"
    (service / "client").mkdir()
    (service / "client" / "lib.py").write_text("LIMIT = 1\n")
    toml = fake_repo / "labs" / "90-fake" / "lab.toml"
    editable = 'story = "test fixture"\neditable = ["service/client"]'
    toml.write_text(toml.read_text().replace('story = "test fixture"', editable))
    publish(fake_repo, "an editable client")
    (service / "client" / "lib.py").write_text("LIMIT = 2\n")
    (service / "server.py").write_text("# the learner rewrote the fake peer\n")
    lab = load_lab("90", fake_repo)
    materialise(lab, "mine", tmp_path / "mine")
    assert (tmp_path / "mine" / "client" / "lib.py").read_text() == "LIMIT = 2\n"
    assert LEAK in (tmp_path / "mine" / "server.py").read_text()


def test_author_mode_builds_the_lab_being_edited(
    fake_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An author edits the broken service before locking: `LEAKLAB_BASE=working` builds
    the edit; without it, `broken` stays what the lock records."""
    server = fake_repo / "labs" / "90-fake" / "service" / "server.py"
    server.write_text(server.read_text() + "# an author's edit\n")
    lab = load_lab("90", fake_repo)
    materialise(lab, "broken", tmp_path / "published")
    monkeypatch.setenv(base.AUTHOR_MODE_ENV, "working")
    materialise(lab, "broken", tmp_path / "working")
    assert "an author's edit" not in (tmp_path / "published" / "server.py").read_text()
    assert "an author's edit" in (tmp_path / "working" / "server.py").read_text()


def test_a_stale_record_is_caught_by_dev_check(fake_repo: Path) -> None:
    assert dev._lock_problems(fake_repo) == []
    server = fake_repo / "labs" / "90-fake" / "service" / "server.py"
    server.write_text(server.read_text() + "# a maintainer's edit\n")
    problems = dev._lock_problems(fake_repo)
    assert len(problems) == 1 and "leaklab dev lock" in problems[0]
    dev.lock(fake_repo)
    git(fake_repo, "commit", "-qam", "the edit and its record")
    assert dev._lock_problems(fake_repo) == []


def test_a_tracked_file_an_ignore_rule_matches_stays_in_the_record(
    fake_repo: Path, tmp_path: Path
) -> None:
    """A captured profile is committed with `git add -f` although .gitignore matches its
    name (a failing test writes one in the service). The record must be the tree that
    was committed, or only the maintainer's clone holds it: a clone that copies objects
    over the wire (CI's; `--no-local` here) must find and build `broken`."""
    (fake_repo / ".gitignore").write_text("profile.json\n")
    (fake_repo / "labs" / "90-fake" / "profile.json").write_text("{}\n")
    git(fake_repo, "add", "-f", "labs/90-fake/profile.json")
    publish(fake_repo, "a captured profile")
    assert dev._lock_problems(fake_repo) == []
    recorded = base.read_lock(fake_repo)["90-fake"]["lab"]
    assert recorded == base.committed_tree(fake_repo, "labs/90-fake")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-local", str(fake_repo), str(clone)], check=True)
    assert dev._lock_problems(clone) == []
    materialise(load_lab("90", clone), "broken", tmp_path / "broken")
    assert (tmp_path / "broken" / "server.py").is_file()


def test_a_record_that_head_does_not_commit_is_caught_by_dev_check(fake_repo: Path) -> None:
    server = fake_repo / "labs" / "90-fake" / "service" / "server.py"
    server.write_text(server.read_text() + "# locked, never committed\n")
    dev.lock(fake_repo)
    problems = dev._lock_problems(fake_repo)
    assert problems and all("HEAD does not commit" in p for p in problems)
    git(fake_repo, "commit", "-qam", "the edit and its record")
    assert dev._lock_problems(fake_repo) == []


def run_cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "leaklab", *args],
        env={**os.environ, "LEAKLAB_ROOT": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_missing_record_is_one_line_and_exit_2(fake_repo: Path) -> None:
    (fake_repo / base.LOCK).unlink()
    result = run_cli(fake_repo, "build", "90")
    assert result.returncode == 2
    assert "labs/base.toml is missing" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_published_tree_not_in_history_says_how_to_recover(fake_repo: Path) -> None:
    lock = fake_repo / base.LOCK
    entry = base.read_lock(fake_repo)["90-fake"]
    lock.write_text(lock.read_text().replace(entry["lab"], "1" * 40))
    with pytest.raises(LeakLabError, match="not in this repository's history") as info:
        base.find(fake_repo, "90-fake")
    assert "fetch-depth: 0" in str(info.value.fix)
    result = run_cli(fake_repo, "diff", "90")
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_without_git_the_error_says_so(fake_repo: Path) -> None:
    env = {**os.environ, "LEAKLAB_ROOT": str(fake_repo), "PATH": str(Path(sys.executable).parent)}
    result = subprocess.run(
        [sys.executable, "-m", "leaklab", "diff", "90"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "git is not installed" in result.stderr and "Traceback" not in result.stderr


def test_a_piped_diff_keeps_every_line_whole(fake_repo: Path) -> None:
    """Piped (a log, `| less`), the learner's hunks are printed as they are: Rich's
    80-column default for a pipe used to cut a long line of code."""
    long_line = "# " + "a long comment, " * 10 + "the end"
    server = fake_repo / "labs" / "90-fake" / "service" / "server.py"
    server.write_text(server.read_text() + long_line + "\n")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    result = subprocess.run(
        [sys.executable, "-m", "leaklab", "diff", "90"],
        env={**env, "LEAKLAB_ROOT": str(fake_repo)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "+" + long_line in result.stdout.splitlines()


REGRESSION_PATCH = """diff --git a/test_regression.py b/test_regression.py
new file mode 100644
--- /dev/null
+++ b/test_regression.py
@@ -0,0 +1 @@
+assert "HELD.append" not in open("server.py").read()
"""


def add_regression_test(root: Path) -> None:
    """The fake solution gains a second patch that adds a regression test (answer.toml)."""
    (root / "solutions" / "90-fake" / "02-regression-test.patch").write_text(REGRESSION_PATCH)
    answer = root / "solutions" / "90-fake" / "answer.toml"
    answer.write_text(
        answer.read_text().replace(
            'patches = ["01-forget.patch"]',
            'patches = ["01-forget.patch", "02-regression-test.patch"]\n'
            'regression_tests = ["test_regression.py"]',
        )
    )


def test_a_grade_tree_has_the_published_tests_and_the_solutions_regression_test(
    fake_repo: Path, tmp_path: Path
) -> None:
    (fake_repo / "labs" / "90-fake" / "service" / "test_server.py").write_text("# published\n")
    add_regression_test(fake_repo)
    toml = fake_repo / "labs" / "90-fake" / "lab.toml"
    toml.write_text(
        toml.read_text().replace(
            'story = "test fixture"', 'story = "test fixture"\ncourse_tests = ["service/test_*.py"]'
        )
    )
    publish(fake_repo, "a regression test")
    service = fake_repo / "labs" / "90-fake" / "service"
    (service / "test_server.py").write_text("# weakened by the learner\n")
    (service / "test_mine.py").write_text("# the learner's own test\n")
    lab = load_lab("90", fake_repo)
    materialise(lab, "mine", tmp_path / "graded", course_tests=True)
    materialise(lab, "mine", tmp_path / "theirs")
    graded = tmp_path / "graded"
    assert (graded / "test_server.py").read_text() == "# published\n"
    assert not (graded / "test_mine.py").exists()
    assert "HELD.append" in (graded / "test_regression.py").read_text()
    assert (tmp_path / "theirs" / "test_server.py").read_text() == "# weakened by the learner\n"


def test_the_course_map_row_must_name_the_lab_as_its_manifest(fake_repo: Path) -> None:
    lab = load_lab("90", fake_repo)
    slug = lab.slug
    links = f"([notebook](notebooks/{slug}.ipynb), [solution](solutions/{slug}/README.md), "
    row = f"| 90 | [{{title}}](labs/{slug}/README.md) {links}[deck](slides/{slug}.md)) | Python |"
    readme = fake_repo / "README.md"
    readme.write_text(row.format(title=lab.title) + "\n")
    assert dev._map_problems(lab) == []
    readme.write_text(row.format(title="An older title") + "\n")
    assert "should name the lab as lab.toml" in " ".join(dev._map_problems(lab))
    readme.write_text("no map at all\n")
    assert "has no row linking the lab" in dev._map_problems(lab)[0]


def test_a_course_copy_another_process_made_first_serves_both(
    fake_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two test workers (or a grade beside a run) may copy the same published course at
    once: the one that finishes second finds the copy made and uses it, instead of
    failing on a rename into a folder that now exists."""
    found = base.find(fake_repo, "90-fake")
    home = found.course()
    made_first = shutil.copytree(home, tmp_path / "made-by-the-other-process")
    shutil.rmtree(home)

    export_tree = base.export_tree

    def the_other_process_finishes_meanwhile(*args: object) -> None:
        export_tree(*args)  # type: ignore[arg-type]
        if not home.exists():
            shutil.copytree(made_first, home)

    monkeypatch.setattr(base, "export_tree", the_other_process_finishes_meanwhile)
    assert found.course() == home
    assert (home / "labs" / "90-fake" / "lab.toml").is_file()
    assert not [p for p in home.parent.iterdir() if p.name.startswith(".staging-")]
