"""`[[implementations]]`: another folder's service, measured as a variant of its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import publish

from leaklab import report
from leaklab.errors import LeakLabError
from leaklab.grading.grade import grade
from leaklab.runner import RunOptions, run
from leaklab.spec import load_lab
from leaklab.variants import materialise

# A rewrite of the fake service that keeps nothing, with a build of its own: it copies
# server.py under another name, so a run that used the lab's [build] could not start it.
IMPLEMENTATION = """
[[implementations]]
name = "rewrite"
folder = "rewrite"

[implementations.build]
commands = [["cp", "server.py", "{out}/rewrite.py"]]
test = [["python3", "-c", "import server"]]

[implementations.service]
command = ["python3", "{build}/rewrite.py", "{port}", "{mode}"]
ready = { http = "/healthz", timeout_s = 5 }
"""


def add_rewrite(root: Path, toml: str = IMPLEMENTATION) -> Path:
    lab_dir = root / "labs" / "90-fake"
    materialise(load_lab("90", root), "fixed", lab_dir / "rewrite")
    with (lab_dir / "lab.toml").open("a") as f:
        f.write(toml)
    publish(root, "a rewrite")
    return lab_dir


def test_an_implementation_is_a_variant_built_from_its_own_folder(
    no_orphans: Path, tmp_path: Path
) -> None:
    lab_dir = add_rewrite(no_orphans)
    (lab_dir / "rewrite" / "server.py").write_text("# uncommitted edit\n")
    lab = load_lab("90", no_orphans)
    assert lab.variants == ["broken", "fixed", "rewrite"]
    materialise(lab, "rewrite", tmp_path / "tree")
    assert "nothing is kept" in (tmp_path / "tree" / "server.py").read_text()  # the published tree

    result = run(lab, RunOptions("rewrite", order=2), log=lambda _: None)
    assert report.summarise(lab, result.data).verdict == "flat"
    assert result.data.meta["variant"] == "rewrite"
    assert "rewrite.py" in result.data.meta["commands"]["service"]
    # The lab's snapshots belong to service/; the implementation declared none.
    assert not (result.json.parent / "rewrite" / "stats.json").exists()


def test_an_implementation_is_not_graded(fake_repo: Path) -> None:
    add_rewrite(fake_repo)
    with pytest.raises(LeakLabError, match="another implementation"):
        grade(load_lab("90", fake_repo), "rewrite", log=lambda _: None)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('name = "rewrite"', 'name = "fixed"', "already a variant's name"),
        ('folder = "rewrite"', 'folder = "service"', "name a folder beside service/"),
        ("[implementations.service]", "[implementations.nothing]", "service"),
    ],
)
def test_a_bad_implementation_is_a_clear_error(
    fake_repo: Path, old: str, new: str, message: str
) -> None:
    add_rewrite(fake_repo, IMPLEMENTATION.replace(old, new))
    with pytest.raises(LeakLabError, match=message):
        load_lab("90", fake_repo)
