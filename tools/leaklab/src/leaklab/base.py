"""The pristine course: each lab as published, found by content, never by HEAD.

A learner commits to push, and a repository made from a template has one squashed
commit, so "the service at git HEAD" stops meaning "the broken service" after the first
commit. Instead, `labs/base.toml` records the git *tree id* of each lab's folders as the
course published them (`labs/NN`, `solutions/NN`, `datasets/NN`). A tree id is a hash of
content, so it survives squashing, template copies and forks: as long as the published
tree is in the repository's object store (it is in the first commit of every copy),
`broken`, the solution stages, `diff` and `grade` start from it, whatever the learner
commits afterwards.

`leaklab dev lock` writes the file from the working tree; `leaklab dev check` (CI) fails
when it no longer matches, so the record can never drift from what is committed.
"""

from __future__ import annotations

import filecmp
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from leaklab.errors import LeakLabError
from leaklab.paths import work_dir

LOCK = Path("labs") / "base.toml"
# Authors only: `LEAKLAB_BASE=working` takes each lab as it is in the working tree instead
# of the recorded trees, so a lab being edited can be built, run and captured before
# `leaklab dev lock`. Learners and the grade never set it.
AUTHOR_MODE_ENV = "LEAKLAB_BASE"
# The three folders of a lab whose published content the grade trusts, by lock key.
FOLDERS = {"lab": "labs", "solution": "solutions", "dataset": "datasets"}
# Folders of `labs/` that are not labs but that labs build with (the Go load kit every
# load program imports): published and recorded like a lab's own folders, under
# `[shared]`, so a grade builds the published load with the published kit.
SHARED = ("loadkit",)
# Build outputs and editor litter: never part of a lab's content, never compared.
IGNORED_NAMES = {".git", "target", "_build", "deps", "node_modules", "__pycache__", ".idea"}


@dataclass(frozen=True)
class Base:
    """One lab's published trees: `lab`, `solution` and `dataset` are git tree ids
    (`dataset` and `solution` are empty when the course has none for the lab)."""

    slug: str
    root: Path
    lab: str
    solution: str
    dataset: str
    # The shared folders' trees, by name (`SHARED`); a folder the course lacks is "".
    shared: tuple[tuple[str, str], ...] = ()

    def tree(self, key: str) -> str:
        return {"lab": self.lab, "solution": self.solution, "dataset": self.dataset}[key]

    def export(self, key: str, subpath: str, dest: Path) -> None:
        """Write `subpath` of one published tree (`""` for all of it) into `dest`."""
        export_tree(self.root, self.tree(key), subpath, dest)

    def course(self) -> Path:
        """A read-only copy of the published lab, solution and datasets, laid out like
        the repository (`labs/NN`, `solutions/NN`, `datasets/NN`), cached by tree ids."""
        trees = (self.lab, self.solution, self.dataset, *(t for _, t in self.shared))
        key = "-".join(t[:12] or "none" for t in trees)
        home = work_dir(self.root) / "base" / self.slug / key
        if home.is_dir():
            return home
        home.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=home.parent, prefix=".staging-"))
        try:
            for lock_key, folder in FOLDERS.items():
                self.export(lock_key, "", staging / folder / self.slug)
            for name, tree in self.shared:
                if tree:
                    export_tree(self.root, tree, "", staging / "labs" / name)
            try:
                staging.rename(home)
            except OSError:
                # Another process (a second test worker, a grade beside a run) made the
                # same copy first: the trees are the same, so theirs serves.
                if not home.is_dir():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return home


def export_tree(root: Path, tree: str, subpath: str, dest: Path) -> None:
    """Write `subpath` of a git tree (`""` for all of it) into `dest`; an empty `tree`
    (a folder the course does not have) makes `dest` empty."""
    dest.mkdir(parents=True)
    if not tree:
        return
    spec = f"{tree}:{subpath}" if subpath else tree
    data = git_bytes(root, "archive", "--format=tar", spec)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in `root` and return its output as text."""
    return git_bytes(root, *args, env=env).decode().strip()


def need_git() -> None:
    if shutil.which("git") is None:
        raise LeakLabError(
            "git is not installed; Leak Lab finds each lab's published code with it",
            "apt-get install git (Debian/Ubuntu) or xcode-select --install (macOS)",
        )


def git_bytes(root: Path, *args: str, env: dict[str, str] | None = None) -> bytes:
    """Run git in `root`; a missing git or a failed command is one clear error."""
    need_git()
    result = subprocess.run(
        ["git", *args],
        cwd=root,
        capture_output=True,
        check=False,
        env={**os.environ, **(env or {})},
    )
    if result.returncode != 0:
        detail = result.stderr.decode(errors="replace").strip().splitlines()
        raise LeakLabError(
            f"git {args[0]} failed in {root}: {detail[-1] if detail else 'no message'}",
            "run inside a git clone of Leak Lab (a template copy works too)",
        )
    return result.stdout


def read_lock(root: Path) -> dict[str, dict[str, str]]:
    """The recorded trees of every lab (`[labs]`), by slug."""
    labs = _raw_lock(root).get("labs", {})
    if not isinstance(labs, dict):
        raise LeakLabError(f"{LOCK}: [labs] must be a table", "regenerate: leaklab dev lock")
    return labs


def read_shared(root: Path) -> dict[str, str]:
    """The recorded trees of the shared folders (`[shared]`), by name; "" for one not
    recorded (a course without it)."""
    shared = _raw_lock(root).get("shared", {})
    if not isinstance(shared, dict):
        raise LeakLabError(f"{LOCK}: [shared] must be a table", "regenerate: leaklab dev lock")
    return {name: str(shared.get(name, "")) for name in SHARED}


# A grade given the course's published commit reads the record from that commit, never
# from the working tree a learner can edit (`leaklab.grading.course`).
COURSE_REF_ENV = "LEAKLAB_COURSE_REF"


def _raw_lock(root: Path) -> dict[str, object]:
    path = root / LOCK
    ref = os.environ.get(COURSE_REF_ENV)
    try:
        if ref:
            return tomllib.loads(git(root, "show", f"{ref}:{LOCK.as_posix()}"))
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise LeakLabError(
            f"{LOCK} is missing, so the published labs cannot be found",
            "restore it with `git checkout <first commit> -- labs/base.toml`",
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise LeakLabError(f"{LOCK} is not valid TOML: {exc}", "restore it from git") from None


def find(root: Path, slug: str) -> Base:
    """The published trees of one lab; one clear line when they cannot be found."""
    if os.environ.get(AUTHOR_MODE_ENV) == "working":
        trees = working_trees(root, [slug])[slug]
        now = tuple(working_shared(root).items())
        return Base(slug, root, trees["lab"], trees["solution"], trees["dataset"], now)
    entry = read_lock(root).get(slug)
    if not isinstance(entry, dict) or not isinstance(entry.get("lab"), str):
        raise LeakLabError(
            f"{LOCK} has no entry for {slug}",
            "maintainers: run `leaklab dev lock` and commit; learners: restore labs/base.toml",
        )
    trees = {key: str(entry.get(key, "")) for key in FOLDERS}
    folders = {key: f"{FOLDERS[key]}/{slug}" for key in FOLDERS}
    recorded = read_shared(root)
    for name, tree in recorded.items():
        trees[name], folders[name] = tree, f"labs/{name}"
    for key, tree in trees.items():
        if tree and not _has_tree(root, tree):
            raise LeakLabError(
                f"the published {folders[key]} (tree {tree[:12]}, {LOCK}) is not in "
                "this repository's history",
                "clone with full history (`git fetch --unshallow`, or actions/checkout with "
                "fetch-depth: 0), or restore the lab from the course template",
            )
    return Base(
        slug, root, trees["lab"], trees["solution"], trees["dataset"], tuple(recorded.items())
    )


def _has_tree(root: Path, tree: str) -> bool:
    return _resolve(root, f"{tree}^{{tree}}") != ""


def git_or_empty(root: Path, *args: str) -> str:
    """Run git in `root`; its output, or "" when the command fails (a missing object)."""
    need_git()
    result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    return result.stdout.strip() if result.returncode == 0 else ""


def working_tree_id(root: Path, folder: str) -> str:
    """The tree id `folder` would have if committed as it is now."""
    return _working_tree_ids(root, {folder: folder})[folder]


def committed_tree(root: Path, folder: str) -> str:
    """The tree id of `folder` in the HEAD commit, "" when HEAD has no such folder."""
    return _resolve(root, f"HEAD:{folder}")


def _resolve(root: Path, rev: str) -> str:
    """The object id `rev` names, "" when this repository has no such object."""
    need_git()
    result = subprocess.run(
        ["git", "rev-parse", "-q", "--verify", rev],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.strip() if result.returncode == 0 else ""


def working_trees(root: Path, slugs: list[str]) -> dict[str, dict[str, str]]:
    """The tree ids each lab's folders would have if committed as they are now."""
    return {
        slug: _working_tree_ids(root, {key: f"{folder}/{slug}" for key, folder in FOLDERS.items()})
        for slug in slugs
    }


def working_shared(root: Path) -> dict[str, str]:
    """The tree ids the shared folders would have if committed as they are now."""
    return _working_tree_ids(root, {name: f"labs/{name}" for name in SHARED})


def _working_tree_ids(root: Path, folders: dict[str, str]) -> dict[str, str]:
    """The tree id of each folder (by key) as `git add --all` would commit it now, ""
    for a missing one. The temporary index starts as a copy of the real one (which is
    never touched): from an empty index, a tracked file that an ignore rule matches
    would be left out, and the recorded tree would exist only in this clone's object
    store, never in a commit another clone receives. The copy keeps the index's mtime:
    git trusts a file's cached stat data unless the file changed within the second the
    index was written, and a fresh mtime would hide such an edit (racy git)."""
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "index"
        real = root / git(root, "rev-parse", "--git-path", "index")
        if real.is_file():
            shutil.copy2(real, index)
        env = {"GIT_INDEX_FILE": str(index)}
        out = {}
        for key, rel in folders.items():
            if not (root / rel).is_dir():
                out[key] = ""
                continue
            git(root, "add", "--all", "--", rel, env=env)
            out[key] = git(root, "write-tree", f"--prefix={rel}/", env=env)
    return out


def write_lock(root: Path, slugs: list[str]) -> Path:
    """Record the published trees of every lab as they are in the working tree now."""
    lines = [
        "# The published content of each lab, as git tree ids: `broken`, the solution",
        "# stages, `diff` and `grade` start from these trees, not from HEAD, so a learner's",
        "# commits never move them. Generated by `leaklab dev lock`; checked in CI by",
        "# `leaklab dev check`. Do not edit by hand.",
        "",
    ]
    shared = {name: tree for name, tree in working_shared(root).items() if tree}
    if shared:
        lines.append("[shared]")
        lines.extend(f'{name} = "{tree}"' for name, tree in shared.items())
        lines.append("")
    for slug, trees in working_trees(root, slugs).items():
        lines.append(f'[labs."{slug}"]')
        lines.extend(f'{key} = "{tree}"' for key, tree in trees.items())
        lines.append("")
    path = root / LOCK
    path.write_text("\n".join(lines))
    return path


def walk(folder: Path) -> Iterator[Path]:
    """Every file below `folder`, relative to it, build outputs left out."""
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and not IGNORED_NAMES.intersection(rel.parts):
            yield rel


def differences(published: Path, working: Path) -> list[str]:
    """Relative paths that differ between two folders: changed, added or removed."""
    ours = set(walk(published))
    theirs = set(walk(working))
    changed = [
        rel
        for rel in ours & theirs
        if not filecmp.cmp(published / rel, working / rel, shallow=False)
    ]
    return sorted(p.as_posix() for p in [*changed, *(ours ^ theirs)])
