"""`leaklab check NN`: the grade's gate on the learner's tree, nothing hidden.

A grade first builds the learner's editable folders inside the published service, puts
the course's published tests and the solution's regression tests in place of the
learner's copies, and runs them; only a tree that passes is measured. `check` runs
exactly that gate (`grade.gate`), so no test can fail for the first time in a grade,
and says for each failing test what it expected, from the test's own failure message
(an assertion's text, not the tail of a log).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from leaklab import status
from leaklab.grading.grade import READY, gate
from leaklab.spec import Lab
from leaklab.variants import PATCH_PREFIX


@dataclass
class Checked:
    """What the gate said about the learner's tree."""

    slug: str
    passed: bool
    stage: str  # where it stopped: scope, build, tests; READY when it passed
    reason: str
    expected: list[str] = field(default_factory=list)  # the failing tests' own words
    log: Path | None = None
    ignored: list[str] = field(default_factory=list)
    own_tests: str | None = None
    variant: str = "mine"


def check(lab: Lab, log: Callable[[str], None] = print, variant: str = "mine") -> Checked:
    """Run the grade's gate on the learner's tree (`mine`), or on the published service
    with a submitted patch (`patch:FILE`), and record the tree's outcome."""
    tree = status.tree_digest(lab)
    result = gate(lab, variant, log)
    passed = result.stage == READY
    checked = Checked(
        lab.slug,
        passed,
        result.stage,
        result.reason,
        # the failing tests' own words, as the gate read them from the test log
        # (leaklab.grading.failures: one reader for check and grade)
        expected=list(result.failed_tests),
        log=_test_log(result.reason),
        ignored=result.ignored,
        own_tests=result.own_tests,
        variant=variant,
    )
    if variant == "mine":  # a patch says nothing about the learner's tree
        status.record(lab, "check", passed, tree)
    return checked


# A failed gate names its log: "... last lines of /path/x.log:" or "(full log: /path/x.log)".
_LOG = re.compile(r"(?:last lines of|full log:) (\S+\.log)")


def _test_log(reason: str) -> Path | None:
    found = _LOG.search(reason)
    return Path(found.group(1)) if found and Path(found.group(1)).is_file() else None


def report(lab: Lab, checked: Checked) -> list[str]:
    """What `leaklab check` prints: one verdict line, then what to do."""
    if checked.variant == "mine":
        what, grade = f"your tree (labs/{lab.slug}/{', '.join(lab.editable)})", ""
    else:
        patch = checked.variant.removeprefix(PATCH_PREFIX)
        what, grade = f"the published service with {patch}", f" --patch {patch}"
    if checked.passed:
        lines = [
            f"PASS  lab {lab.number}: {what} builds and passes the course's "
            "tests and the solution's regression tests, the gate a grade runs first",
        ]
        if checked.own_tests:
            lines.append(f"      your own tests (not part of the gate): {checked.own_tests}")
        lines.append(
            f"next: `leaklab grade {lab.number}{grade}` measures it under the standard load"
        )
        return lines
    first = checked.reason.splitlines()[0] if checked.reason else "failed"
    lines = [f"FAIL  lab {lab.number} at {checked.stage}: {first}"]
    if checked.expected:
        lines.append("what the failing tests expect (their own messages):")
        lines += [f"  {line.strip()}" for line in checked.expected]
    elif len(checked.reason.splitlines()) > 1:
        lines += [f"  {line}" for line in checked.reason.splitlines()[1:]]
    if checked.log:
        lines.append(f"full log: {checked.log}")
    return lines
