"""Variants: one source of truth for every version of a lab's service.

Every variant starts from the lab as the course published it (`leaklab.base`: found by
content, so a learner's commits never move it):

- `broken`: the published `service/`;
- `stage-K`: broken plus solution patches 1..K; `fixed`: all patches;
- `mine`: broken with the folders the learner may edit (`[lab] editable`) taken from
  the learner's working tree, committed or not;
- `patch:<file>`: broken plus one given patch (a submitted fix, or the course's own
  alternative and wrong fixes that prove the grader);
- an implementation's name (`[[implementations]]`, e.g. lab 05's `tokio`): its own
  published folder beside `service/`, never patched.

A variant is materialised into a fresh directory; `labs/` is never edited in place.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from leaklab import base
from leaklab.base import IGNORED_NAMES
from leaklab.errors import LeakLabError
from leaklab.spec import Lab

# Where a run without an `order` (a named capture, a learner's run) sorts in tables:
# after the standard variants.
UNORDERED = 99

PATCH_PREFIX = "patch:"
SERVICE = "service"


def dataset_name(variant: str) -> str:
    """A file-name-safe name for a variant's dataset: `patch:dir/x.patch` -> `patch-x`."""
    if variant.startswith(PATCH_PREFIX):
        return "patch-" + Path(variant[len(PATCH_PREFIX) :]).stem
    return variant


def patches_for(lab: Lab, variant: str) -> list[Path]:
    """The solution patches a variant applies, in order."""
    count = len(lab.patches)
    if variant.startswith(PATCH_PREFIX):
        return [Path(variant[len(PATCH_PREFIX) :]).resolve()]
    if variant in ("broken", "mine") or lab.implementation(variant):
        k = 0
    elif variant == "fixed":
        k = count
    elif variant.startswith("stage-") and variant[6:].isdigit() and 1 <= int(variant[6:]) <= count:
        k = int(variant[6:])
    else:
        raise LeakLabError(
            f"unknown variant {variant!r} for lab {lab.slug}",
            f"choose one of: {', '.join([*lab.variants, 'mine'])}, or patch:FILE",
        )
    return [lab.solution_dir / name for name in lab.patches[:k]]


def materialise(lab: Lab, variant: str, dest: Path, course_tests: bool = False) -> None:
    """Write the variant's service source tree into `dest` (which must not exist).

    With `course_tests` (a grade), a learner's tree gets the course's tests in place of
    its own, so weakening a test cannot pass a grade."""
    patches = patches_for(lab, variant)
    published = base.find(lab.root, lab.slug)
    impl = lab.implementation(variant)
    published.export("lab", impl.folder if impl else SERVICE, dest)
    learner = variant == "mine" or variant.startswith(PATCH_PREFIX)
    if variant == "mine":
        take_editable(lab, lab.learner_lab_dir / SERVICE, dest)
    elif variant.startswith(PATCH_PREFIX):
        # A submission, like the learner's tree, changes only what a learner may edit:
        # apply it to a copy and take the editable folders from there.
        candidate = dest.with_name(dest.name + ".candidate")
        shutil.copytree(dest, candidate)
        try:
            for patch in patches:
                apply_patch(patch, candidate)
            take_editable(lab, candidate, dest)
        finally:
            shutil.rmtree(candidate, ignore_errors=True)
    else:
        for patch in patches:
            apply_patch(patch, dest)
    if learner:
        _restore_fixtures(lab, published, dest)
        if course_tests:
            _take_course_tests(lab, published, dest)


def _restore_fixtures(lab: Lab, published: base.Base, dest: Path) -> None:
    """The measuring files inside the editable folders, as published."""
    if not lab.fixtures:
        return
    with tempfile.TemporaryDirectory() as tmp:
        service = Path(tmp) / SERVICE
        published.export("lab", SERVICE, service)
        for rel in lab.fixtures:
            inside = rel.removeprefix(SERVICE + "/")
            (dest / inside).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(service / inside, dest / inside)


def course_test_patterns(lab: Lab) -> list[str]:
    """`[lab] course_tests` as globs inside the service's tree."""
    return [g.removeprefix(SERVICE + "/") for g in lab.course_tests]


def _take_course_tests(lab: Lab, published: base.Base, dest: Path) -> None:
    """The course's tests in place of the learner's: every file matching `course_tests`
    as published, plus the solution's regression tests (written against the published
    API, so any valid fix passes them; the solution's other tests may test its own
    internals, and are not the course's)."""
    patterns = course_test_patterns(lab)
    with tempfile.TemporaryDirectory() as tmp:
        service, fixed = Path(tmp) / SERVICE, Path(tmp) / "fixed"
        published.export("lab", SERVICE, service)
        if lab.regression_tests:
            materialise(lab, "fixed", fixed)
        for pattern in patterns:
            for path in dest.glob(pattern):
                if path.is_file():
                    path.unlink()
            for path in service.glob(pattern):
                if path.is_file():
                    _copy(path, dest / path.relative_to(service))
        for rel in lab.regression_tests:
            _copy(fixed / rel, dest / rel)


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)


def editable_parts(lab: Lab) -> list[str]:
    """The editable folders as paths inside `service/` (`""` for all of it)."""
    return [p.removeprefix(SERVICE).lstrip("/") for p in lab.editable]


def take_editable(lab: Lab, tree: Path, dest: Path) -> None:
    """Replace the editable folders of the service in `dest` with those of `tree`."""
    if not tree.is_dir():
        raise LeakLabError(f"{tree} does not exist", f"restore it: git checkout -- {tree}")
    for part in editable_parts(lab):
        target = dest / part
        if target.exists():
            shutil.rmtree(target)
        if (tree / part).is_dir():
            shutil.copytree(tree / part, target, ignore=_ignored, dirs_exist_ok=True)


def outside_editable(lab: Lab, candidate: Path, dest: Path) -> list[str]:
    """Files of the service that `candidate` changes outside what a learner may edit,
    given the published service in `dest` (paths relative to the lab folder)."""
    parts = editable_parts(lab)
    changed = base.differences(dest, candidate)
    return [
        f"{SERVICE}/{path}"
        for path in changed
        if f"{SERVICE}/{path}" in lab.fixtures
        or not any(part == "" or path == part or path.startswith(part + "/") for part in parts)
    ]


# A learner's `git diff` from the repository root names `labs/NN-slug/service/<file>`;
# the tree a patch applies to is the service itself, so those folders are stripped too.
ROOT_RELATIVE = re.compile(r"labs/[^/]+/service/")


def _named_files(patch: Path) -> list[str]:
    """The files a unified diff names, after its `a/` and `b/`."""
    found = []
    for line in patch.read_text(errors="replace").splitlines():
        if line.startswith(("--- a/", "+++ b/")):
            name = line[6:].split("\t")[0].strip()
            if name not in found:
                found.append(name)
    return found


def _strip(patch: Path) -> int:
    """`git apply -p`: 1 for a diff of the service's own files (the course's patches, a
    diff made inside `service/`), 4 for one made from the repository root."""
    names = _named_files(patch)
    return 4 if names and all(ROOT_RELATIVE.match(n) for n in names) else 1


def patched_files(patch: Path) -> list[str]:
    """The files a unified diff changes, relative to the service tree it applies to."""
    names = _named_files(patch)
    if _strip(patch) == 4:
        return [ROOT_RELATIVE.sub("", n, count=1) for n in names]
    return names


def apply_patch(patch: Path, tree: Path) -> None:
    """`git apply` inside `tree`, isolated from the enclosing repository. A patch may name
    the service's files from the service (`a/server.py`) or from the repository root
    (`a/labs/NN-slug/service/server.py`, as `git diff` there writes it)."""
    if not patch.is_file():
        raise LeakLabError(f"patch {patch} is missing", "restore it from git")
    env = {**os.environ, "GIT_DIR": str(tree / ".no-git")}  # apply as plain files, not a repo
    result = subprocess.run(
        ["git", "apply", f"-p{_strip(patch)}", "--whitespace=nowarn", str(patch)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        detail = result.stderr.strip().splitlines()
        raise LeakLabError(
            f"patch {patch.name} does not apply: {detail[0] if detail else 'git apply failed'}",
            "the service or the patch series changed; regenerate the patch against it",
        )


def _ignored(_folder: str, names: list[str]) -> list[str]:
    return [n for n in names if n in IGNORED_NAMES]
