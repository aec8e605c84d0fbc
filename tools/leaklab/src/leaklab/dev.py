"""`leaklab dev`: the maintainers' commands that keep the course consistent.

`lock` records each lab's published trees (`leaklab.base`); `check` proves the course
agrees with itself: the record matches the files, every recorded tree is the one HEAD
commits (so every clone has it, not only the maintainer's), every solution stage
materialises (its patches apply in order), and every lab has its README (sending the
learner to `leaklab hint`), no spoiler of its answer on a pre-exercise surface
(`leaklab.spoilers`), its notebook, deck, datasets, grading cases, a row in the course
map, a classroom grading step and a regression test named by its fix.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from leaklab import base, hints, spoilers
from leaklab.errors import LeakLabError
from leaklab.spec import Lab, lab_slugs, load_lab
from leaklab.variants import materialise


def lock(root: Path) -> Path:
    return base.write_lock(root, lab_slugs(root))


def check(root: Path) -> list[str]:
    """Every disagreement in the course, one line each; empty when all is well."""
    problems = _lock_problems(root)
    for slug in lab_slugs(root):
        try:
            lab = load_lab(slug, root)
        except LeakLabError as exc:
            problems.append(str(exc))
            continue
        problems += _stage_problems(lab)
        problems += _file_problems(lab)
        problems += hints.problems(lab)
        problems += [
            f"{slug}: spoiler on a pre-exercise surface: {hit}" for hit in spoilers.find(lab)
        ]
    return problems


def _lock_problems(root: Path) -> list[str]:
    slugs = lab_slugs(root)
    try:
        recorded = base.read_lock(root)
    except LeakLabError as exc:
        return [str(exc)]
    now = base.working_trees(root, slugs)
    shared = base.read_shared(root)
    problems = []
    for name, tree in base.working_shared(root).items():
        if shared[name] != tree:
            problems.append(
                f"{base.LOCK} does not match labs/{name}: run `leaklab dev lock` and commit "
                "the result"
            )
        else:
            problems += _uncommitted(root, {f"labs/{name}": tree})
    for slug in sorted(set(recorded) - set(slugs)):
        problems.append(f"{base.LOCK} records {slug}, which has no labs/{slug}/lab.toml")
    for slug in slugs:
        if recorded.get(slug) != now[slug]:
            problems.append(
                f"{base.LOCK} does not match labs/{slug} (or its solution or datasets): "
                "run `leaklab dev lock` and commit the result"
            )
        else:
            trees = recorded[slug]
            problems += _uncommitted(
                root, {f"{folder}/{slug}": trees[key] for key, folder in base.FOLDERS.items()}
            )
    return problems


def _uncommitted(root: Path, recorded: dict[str, str]) -> list[str]:
    """A recorded tree must be the one HEAD commits: a tree present only in this clone's
    object store (never committed) is missing from every other clone, CI's included.
    (A tree HEAD commits is in the store, so this also covers `base.find`'s check.)"""
    return [
        f"{base.LOCK} records a tree for {folder} that HEAD does not commit: commit "
        "everything, then `leaklab dev lock` and commit the result"
        for folder, tree in recorded.items()
        if tree and base.committed_tree(root, folder) != tree
    ]


def _stage_problems(lab: Lab) -> list[str]:
    """Every variant materialises: the published tree exists and the patches apply."""
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for variant in lab.variants:
            try:
                materialise(lab, variant, Path(tmp) / variant)
            except LeakLabError as exc:
                problems.append(f"{lab.slug} {variant}: {exc.what}")
    return problems


def _map_problems(lab: Lab) -> list[str]:
    """The course map's row for a lab names it by its manifest's title and links its
    README, notebook, solution and deck."""
    readme = lab.root / "README.md"
    text = readme.read_text() if readme.is_file() else ""
    slug = lab.slug
    row = next((r for r in text.splitlines() if f"(labs/{slug}/README.md)" in r), None)
    if row is None:
        return [f"{slug}: the course map in README.md has no row linking the lab"]
    problems = []
    if f"[{lab.title}](labs/{slug}/README.md)" not in row:
        problems.append(f"{slug}: the course map should name the lab as lab.toml: {lab.title!r}")
    for link in (f"notebooks/{slug}.ipynb", f"solutions/{slug}/README.md", f"slides/{slug}.md"):
        if f"({link})" not in row:
            problems.append(f"{slug}: the course map's row does not link {link}")
    return problems


def _file_problems(lab: Lab) -> list[str]:
    root, slug = lab.root, lab.slug
    wanted = {
        "the case study": lab.lab_dir / "README.md",
        "the solution's README": lab.solution_dir / "README.md",
        "the notebook": root / "notebooks" / f"{slug}.ipynb",
        "the deck": root / "slides" / f"{slug}.md",
        "the captured broken run": lab.dataset_dir / "broken.json",
        "the captured fixed run": lab.dataset_dir / "fixed.json",
    }
    problems = [
        f"{slug}: {what} is missing ({path})" for what, path in wanted.items() if not path.is_file()
    ]
    grading = root / "tools" / "leaklab" / "tests" / "grading" / slug
    for folder in ("pass", "fail"):
        if len(list((grading / folder).glob("*.patch"))) < 2:
            problems.append(f"{slug}: needs two or more grading cases in {grading / folder}")
    problems += _map_problems(lab)
    classroom = root / ".github" / "workflows" / "classroom.yml"
    text = classroom.read_text() if classroom.is_file() else ""
    if f"leaklab grade {lab.number} " not in text:
        problems.append(
            f"{slug}: {classroom.relative_to(root)} has no `leaklab grade {lab.number}` step"
        )
    if lab.patches and not lab.regression_tests:
        problems.append(f"{slug}: answer.toml's regression_tests names no test added by the fix")
    return problems
