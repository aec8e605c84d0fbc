from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from leaklab.build import build_variant
from leaklab.errors import LeakLabError
from leaklab.spec import Command, load_lab
from leaklab.variants import materialise, patched_files


def test_broken_comes_from_head_not_the_working_tree(fake_repo: Path, tmp_path: Path) -> None:
    lab = load_lab("90", fake_repo)
    (lab.service_dir / "server.py").write_text("# a learner's edit\n")
    materialise(lab, "broken", tmp_path / "broken")
    materialise(lab, "mine", tmp_path / "mine")
    assert "HELD.append(body)" in (tmp_path / "broken" / "server.py").read_text()
    assert (tmp_path / "mine" / "server.py").read_text() == "# a learner's edit\n"
    assert (lab.service_dir / "server.py").read_text() == "# a learner's edit\n"


def test_fixed_applies_the_patch_series(fake_repo: Path, tmp_path: Path) -> None:
    lab = load_lab("90", fake_repo)
    materialise(lab, "fixed", tmp_path / "fixed")
    text = (tmp_path / "fixed" / "server.py").read_text()
    assert "HELD.append(body)" not in text and "nothing is kept" in text
    assert "HELD.append(body)" in (lab.service_dir / "server.py").read_text()


def test_unknown_variant(fake_repo: Path, tmp_path: Path) -> None:
    lab = load_lab("90", fake_repo)
    with pytest.raises(LeakLabError, match="unknown variant 'stage-7'"):
        materialise(lab, "stage-7", tmp_path / "x")


def test_patch_that_does_not_apply(fake_repo: Path, tmp_path: Path) -> None:
    lab = load_lab("90", fake_repo)
    patch = lab.solution_dir / "01-forget.patch"
    patch.write_text(patch.read_text().replace("HELD.append(body)", "HELD.extend(body)"))
    with pytest.raises(LeakLabError, match=r"01-forget\.patch does not apply"):
        materialise(lab, "fixed", tmp_path / "fixed")


def test_a_patch_made_from_the_repository_root_applies(fake_repo: Path, tmp_path: Path) -> None:
    """`git diff` from the repository root names labs/NN-slug/service/<file>: a learner's
    natural patch, which `grade --patch` used to reject as 'does not apply'."""
    lab = load_lab("90", fake_repo)
    ours = (lab.solution_dir / "01-forget.patch").read_text()
    rooted = tmp_path / "from-root.patch"
    rooted.write_text(
        ours.replace("a/server.py", "a/labs/90-fake/service/server.py").replace(
            "b/server.py", "b/labs/90-fake/service/server.py"
        )
    )
    assert patched_files(rooted) == ["server.py"]
    materialise(lab, f"patch:{rooted}", tmp_path / "mine")
    assert "nothing is kept" in (tmp_path / "mine" / "server.py").read_text()


def test_builds_are_cached_by_content(fake_repo: Path) -> None:
    lab = load_lab("90", fake_repo)
    first = build_variant(lab, "broken", log=lambda _: None)
    again = build_variant(lab, "broken", log=lambda _: None)
    fixed = build_variant(lab, "fixed", log=lambda _: None)
    assert not first.cached and again.cached and again.key == first.key
    assert fixed.key != first.key
    assert (first.out / "server.py").is_file()


def test_two_builds_of_one_tree_at_once_build_it_once(fake_repo: Path) -> None:
    """Two terminals (or two test workers) building the same variant: one builds, the
    other waits and takes the finished build, instead of deleting it as a failed one."""
    toml = fake_repo / "labs" / "90-fake" / "lab.toml"
    toml.write_text(
        toml.read_text().replace('"import shutil,', '"import time; time.sleep(1); import shutil,')
    )
    lab = load_lab("90", fake_repo)
    with ThreadPoolExecutor(2) as pool:
        builds = list(
            pool.map(lambda _: build_variant(lab, "broken", log=lambda _: None), range(2))
        )
    assert sorted(b.cached for b in builds) == [False, True]
    assert builds[0].key == builds[1].key and (builds[0].out / "server.py").is_file()


def test_a_build_extra_is_built_only_when_asked_for(fake_repo: Path) -> None:
    toml = fake_repo / "labs" / "90-fake" / "lab.toml"
    extra = '[build.extras]\ncopy = [["cp", "{out}/server.py", "{out}/server-copy.py"]]\n'
    toml.write_text(toml.read_text().replace("[service]", extra + "\n[service]", 1))
    lab = load_lab("90", fake_repo)
    plain = build_variant(lab, "broken", log=lambda _: None)
    more = build_variant(lab, "broken", log=lambda _: None, extras=("copy",))
    assert not (plain.out / "server-copy.py").exists()
    assert (more.out / "server-copy.py").is_file() and more.key != plain.key
    with pytest.raises(LeakLabError, match="no build extra named nope"):
        build_variant(lab, "broken", log=lambda _: None, extras=("nope",))


def test_failing_build_shows_the_log(fake_repo: Path) -> None:
    lab = load_lab("90", fake_repo)
    (lab.service_dir / "server.py").unlink()
    with pytest.raises(LeakLabError, match="failed") as info:
        build_variant(lab, "mine", log=lambda _: None)
    assert "server.py" in str(info.value)


def test_a_build_starts_from_the_last_builds_outputs_when_its_preset_says_so(
    fake_repo: Path,
) -> None:
    """`reuse_outputs` (sbt's preset): a new build starts from a copy of the last
    finished build's output folders; without one (none yet, or lost) it starts clean."""
    lab = load_lab("90", fake_repo)
    probe = (
        "import os, sys; "
        "open(sys.argv[1] + '/started-from-last', 'w').write(str(os.path.exists('made/stamp'))); "
        "os.makedirs('made', exist_ok=True); open('made/stamp', 'w').write('x')"
    )
    build = replace(
        lab.build,
        commands=(Command(("python3", "-c", probe, "{out}")),),
        reuse_outputs=("made",),
    )
    lab = replace(lab, build=build)
    first = build_variant(lab, "broken", log=lambda _: None)
    second = build_variant(lab, "fixed", log=lambda _: None)
    assert (first.out / "started-from-last").read_text() == "False"
    assert (second.out / "started-from-last").read_text() == "True"
    seeds = fake_repo / ".leaklab" / "build" / lab.slug / "cache" / "seeds"
    shutil.rmtree(seeds / second.key)  # lost: the next build compiles from scratch
    (lab.service_dir / "server.py").write_text("# a learner's edit\n")
    third = build_variant(lab, "mine", log=lambda _: None)
    assert (third.out / "started-from-last").read_text() == "False"
