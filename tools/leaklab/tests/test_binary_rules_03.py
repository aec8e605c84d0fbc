"""Lab 03's binary rules, proven on the course's OTP before the lab uses them (issue 35).

The lab's diagnosis says which slices of a large binary keep it alive after a
collection. Those rules are implementation details of ERTS, not documented guarantees,
so the course runs the proof its README prints (`solutions/03-.../binary_rules.exs`)
and checks every figure the README quotes: a collection turns a slice of at most
24 bytes into a binary of its own only in the process that cut it; a slice received in
a message keeps its whole binary, whatever its length; a binary pattern in compiled
code copies a slice of at most 64 bytes when it cuts it. A new OTP that changes any of
them fails here, naming the line, before the README is wrong.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from leaklab.paths import repo_root

pytestmark = pytest.mark.skipif(shutil.which("elixir") is None, reason="needs Elixir")

SCRIPT = repo_root() / "solutions" / "03-elixir-refc-binaries" / "binary_rules.exs"
DOCUMENT = 1_020  # the decoded document's bytes besides its etag

# (kind, slice bytes) -> (referenced before the collection, referenced after)
EXPECTED = {
    ("made here", 20): (DOCUMENT + 20, 20),
    ("made here", 24): (DOCUMENT + 24, 24),
    ("made here", 32): (DOCUMENT + 32, DOCUMENT + 32),
    ("made here", 40): (DOCUMENT + 40, DOCUMENT + 40),
    ("received", 20): (DOCUMENT + 20, DOCUMENT + 20),
    ("received", 40): (DOCUMENT + 40, DOCUMENT + 40),
}
MATCHED = {20: 20, 64: 64, 65: 1_000}


def _run() -> str:
    done = subprocess.run(
        ["elixir", str(SCRIPT)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _figures(line: str) -> list[int]:
    return [int(word) for word in line.replace(":", " ").split() if word.isdigit()]


def test_the_binary_rules_hold_on_the_courses_otp() -> None:
    out = _run()
    assert "OTP 25" in out, f"the README's figures were measured on OTP 25:\n{out}"
    seen = {}
    for line in out.splitlines():
        kind = line[:10].strip()
        if kind in ("made here", "received"):
            size, before, after = _figures(line)
            seen[(kind, size)] = (before, after)
        elif kind == "matched":
            size, referenced = _figures(line)
            assert MATCHED[size] == referenced, line
    assert seen == EXPECTED, out
