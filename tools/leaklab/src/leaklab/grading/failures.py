"""The assertion that failed, read from a test run's log, for each toolchain the labs use.

A failed grade used to show the log's last lines (a backtrace, `failures:`); a learner
needs the test's name and what it expected. Each runner prints that in its own form:

- go test:  `--- FAIL: TestName` followed by `file_test.go:NN: message` lines;
- cargo:    `thread 'name' panicked at file.rs:NN:MM:` and the panic message after it
            (Rust 1.92 and later put the thread's id after its name: `'name' (29164)`);
- ExUnit:   `N) test name (Module)` then `Assertion with == failed` / `code:` / `left:`;
- ScalaTest: `- name *** FAILED ***` and the message on the same or the next line;
- Python (the harness's own fake labs): `AssertionError: message`.

Nothing here is parsed for meaning: the lines are quoted as the runner printed them.
"""

from __future__ import annotations

import re

# How many assertions a result keeps: enough to see the pattern, short enough for a
# job summary row.
LIMIT = 5

GO_FAIL = re.compile(r"^\s*--- FAIL: (\S+)")
GO_LINE = re.compile(r"^\s+(\S+_test\.go:\d+: .+)$")
RUST_PANIC = re.compile(
    r"^thread '([^']+)'(?: \(\d+\))? panicked at (\S+?):?$"
    r"|^thread '([^']+)'(?: \(\d+\))? panicked at '"
)
EX_TEST = re.compile(r"^\s+\d+\) test (.+) \((\S+)\)$")
EX_DETAIL = re.compile(r"^\s+(Assertion with .+|code: .+|left: .+|right: .+|\*\* \(.+)$")
SCALA = re.compile(r"^(?:\[info\] )?\s*- (.+) \*\*\* FAILED \*\*\*(.*)$")
SCALA_NEXT = re.compile(r"^(?:\[info\] )?\s+(\S.+)$")


def assertions(log: str) -> list[str]:
    """The failed tests of one log, "name: message", in the order they failed."""
    lines = log.splitlines()
    found = _go(lines) or _rust(lines) or _exunit(lines) or _scala(lines) or _python(lines)
    return found[:LIMIT]


def _go(lines: list[str]) -> list[str]:
    found = []
    for i, line in enumerate(lines):
        if not (m := GO_FAIL.match(line)):
            continue
        # go test prints a test's log lines before its `--- FAIL` line when run
        # verbosely and after it otherwise: look both ways, nearest first.
        near = [*lines[i + 1 : i + 6], *reversed(lines[max(0, i - 5) : i])]
        message = next((g.group(1) for n in near if (g := GO_LINE.match(n))), "")
        found.append(f"{m.group(1)}: {message}" if message else m.group(1))
    return found


def _rust(lines: list[str]) -> list[str]:
    found = []
    for i, line in enumerate(lines):
        if not (m := RUST_PANIC.match(line)):
            continue
        name = m.group(1) or m.group(3)
        where = m.group(2) or ""
        # The message runs from the next line to a blank line, a note or the backtrace.
        body = []
        for x in lines[i + 1 : i + 4]:
            if not x.strip() or x.startswith(("note:", "stack backtrace", "---")):
                break
            body.append(x.strip())
        message = " ".join(body)
        found.append(f"{name} ({where}): {message}" if where else f"{name}: {message}")
    return found


def _exunit(lines: list[str]) -> list[str]:
    found = []
    for i, line in enumerate(lines):
        if not (m := EX_TEST.match(line)):
            continue
        details = [d.group(1) for n in lines[i + 1 : i + 12] if (d := EX_DETAIL.match(n))]
        found.append(f"{m.group(1)} ({m.group(2)}): {' '.join(details[:3])}".rstrip(": "))
    return found


def _scala(lines: list[str]) -> list[str]:
    found = []
    for i, line in enumerate(lines):
        if not (m := SCALA.match(line)):
            continue
        message = m.group(2).strip(" ()")
        if not message and i + 1 < len(lines) and (n := SCALA_NEXT.match(lines[i + 1])):
            message = n.group(1)
        found.append(f"{m.group(1)}: {message}" if message else m.group(1))
    return found


PYTHON = re.compile(r"^(AssertionError: .+)$")


def _python(lines: list[str]) -> list[str]:
    return list(dict.fromkeys(m.group(1) for line in lines if (m := PYTHON.match(line))))
