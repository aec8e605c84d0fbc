"""`leaklab watch NN`: `leaklab check NN` again on every save in the editable folders.

Watching is watchfiles' job (inotify, FSEvents or polling, debounced, so an editor's
burst of writes on one save is one change); build outputs and editor litter are left
out. The check runs once at the start, then after each change; when it passes, the
measured run is offered (a grade needs the machine for a minute or more, so it is never
started without asking). Ctrl-C ends the watch with exit 0.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

from watchfiles import Change, DefaultFilter, watch

from leaklab.base import IGNORED_NAMES
from leaklab.errors import LeakLabError
from leaklab.spec import Lab

# ms: changes closer together than this are one save (an editor writes a temp file,
# renames it, touches a backup); watchfiles' own default is 1.6 s.
DEBOUNCE_MS = 400
# ms: how long the watcher waits before it reports "nothing changed" (how soon after a
# check the learner is told it is watching again).
READY_MS = 300


class _Sources(DefaultFilter):
    """Source files only: no build outputs (cargo's target/, mix's _build/), no editor
    swap or backup files (DefaultFilter's list)."""

    def __init__(self) -> None:
        super().__init__(ignore_dirs=(*DefaultFilter.ignore_dirs, *IGNORED_NAMES))


def missing_toolchain(lab: Lab) -> list[str]:
    """The programs the lab's `[lab.versions]` names that are not on PATH."""
    return sorted({argv[0] for argv in lab.versions.values() if shutil.which(argv[0]) is None})


def folders(lab: Lab) -> list[Path]:
    """The editable folders of the learner's lab, as watched."""
    found = [lab.learner_lab_dir / part for part in lab.editable]
    missing = [p for p in found if not p.is_dir()]
    if missing:
        raise LeakLabError(
            f"{missing[0]} does not exist", f"restore it: git checkout -- {missing[0]}"
        )
    return found


def changed_names(changes: Iterable[tuple[Change, str]], lab: Lab) -> list[str]:
    """The changed files, relative to the lab folder, for the line that says why."""
    names = set()
    for _, path in changes:
        try:
            names.add(Path(path).relative_to(lab.learner_lab_dir).as_posix())
        except ValueError:
            names.add(path)
    return sorted(names)


def run(
    lab: Lab,
    on_change: Callable[[list[str]], None],
    on_ready: Callable[[], None] = lambda: None,
) -> None:
    """Call `on_change([])` once, then `on_change(files)` after every debounced change,
    until Ctrl-C (KeyboardInterrupt, left to the caller). `on_ready` is called each time
    the watcher is listening again after a check: a save before that moment would be
    seen all the same (the watcher keeps what happens while a check runs), but a
    message that says "watching" must be true when it is printed."""
    missing = missing_toolchain(lab)
    if missing:
        raise LeakLabError(
            f"lab {lab.number} needs {', '.join(missing)}, not installed here: "
            f"run scripts/setup --lab {lab.number}, then leaklab watch {lab.number}"
        )
    paths = folders(lab)
    on_change([])
    said = False
    for changes in watch(
        *paths,
        watch_filter=_Sources(),
        debounce=DEBOUNCE_MS,
        step=50,
        rust_timeout=READY_MS,
        yield_on_timeout=True,
        raise_interrupt=True,
    ):
        if not changes:  # a timeout: the watcher is up and nothing changed
            if not said:
                on_ready()
                said = True
            continue
        on_change(changed_names(changes, lab))
        said = False
