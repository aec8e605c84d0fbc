"""Variants: one source of truth for every version of a lab's service.

- `broken`: `labs/NN/service` as committed at git HEAD (a learner's edits never change it);
- `stage-K`: broken plus solution patches 1..K; `fixed`: all patches;
- `mine`: the learner's working tree, as it is on disk;
- `patch:<file>`: broken plus one given patch (a submitted fix, or the course's own
  alternative and wrong fixes that prove the grader);
- an implementation's name (`[[implementations]]`, e.g. lab 05's `tokio`): its own
  folder beside `service/`, as committed at git HEAD, never patched.

A variant is materialised into a fresh directory; `labs/` is never edited in place.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from leaklab.errors import LeakLabError
from leaklab.spec import Lab

# Build outputs and editor litter that must not leak into a `mine` build or its hash.
PATCH_PREFIX = "patch:"
IGNORED_NAMES = {".git", "target", "_build", "deps", "node_modules", "__pycache__", ".idea"}


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


def materialise(lab: Lab, variant: str, dest: Path) -> None:
    """Write the variant's service source tree into `dest` (which must not exist)."""
    patches = patches_for(lab, variant)
    impl = lab.implementation(variant)
    if variant == "mine":
        _copy_working_tree(lab.service_dir, dest)
    else:
        _export_from_head(lab, lab.lab_dir / impl.folder if impl else lab.service_dir, dest)
    for patch in patches:
        apply_patch(patch, dest)


def apply_patch(patch: Path, tree: Path) -> None:
    """`git apply -p1` inside `tree`, isolated from the enclosing repository."""
    if not patch.is_file():
        raise LeakLabError(f"patch {patch} is missing", "restore it from git")
    env = {**os.environ, "GIT_DIR": str(tree / ".no-git")}  # apply as plain files, not a repo
    result = subprocess.run(
        ["git", "apply", "-p1", "--whitespace=nowarn", str(patch)],
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


def _export_from_head(lab: Lab, folder: Path, dest: Path) -> None:
    rel = folder.relative_to(lab.root).as_posix()
    result = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD", rel],
        cwd=lab.root,
        capture_output=True,
        check=False,
    )
    if result.returncode != 0:
        raise LeakLabError(
            f"cannot read {rel} at git HEAD: {result.stderr.decode().strip()}",
            "run inside a git clone of Leak Lab with the lab committed",
        )
    dest.mkdir(parents=True)
    prefix = rel + "/"
    with tarfile.open(fileobj=io.BytesIO(result.stdout)) as tar:
        members = []
        for member in tar.getmembers():
            if member.name.startswith(prefix):
                member.name = member.name[len(prefix) :]
                members.append(member)
        if not members:
            raise LeakLabError(f"{rel} is empty at git HEAD", "commit the lab's service")
        tar.extractall(dest, members=members, filter="data")


def _copy_working_tree(src: Path, dest: Path) -> None:
    if not src.is_dir():
        raise LeakLabError(f"{src} does not exist", "restore it with git checkout")
    shutil.copytree(src, dest, ignore=lambda _d, names: [n for n in names if n in IGNORED_NAMES])
