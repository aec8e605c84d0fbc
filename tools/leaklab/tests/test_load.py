"""The load side of a run (`leaklab.load`): asking a program to stop."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from leaklab.load import LoadProgram
from leaklab.procs import ProcessGroup
from leaklab.samplers import Recorder

# A program that handles signals the usual way: the first SIGTERM asks it to stop (it
# prints its final line), a second one means "now" (it exits 1 without one).
POLITE = """
import json, signal, sys, time
asked = []
def on_term(signum, frame):
    if asked:
        sys.exit(1)
    asked.append(time.monotonic())
signal.signal(signal.SIGTERM, on_term)
print(json.dumps({"t_s": 0.0, "sent": 0}), flush=True)
while not asked:
    time.sleep(0.01)
time.sleep(0.3)  # finishing what is in flight
print(json.dumps({"done": True, "t_s": 1.0, "sent": 5}), flush=True)
"""


def test_a_program_is_asked_to_stop_once(tmp_path: Path) -> None:
    """A look that decides asks the program to stop, and a self-driving run's last look
    asks again: the second request must not turn into a second signal."""
    with ProcessGroup() as group:
        load = LoadProgram(group, Recorder())
        load.start([sys.executable, "-c", POLITE], cwd=tmp_path, log=tmp_path / "load.log")
        deadline = time.monotonic() + 10
        while not load.result.last and time.monotonic() < deadline:
            time.sleep(0.01)
        load.ask_to_stop()
        time.sleep(0.1)  # delivered and handled: a second signal would not merge with it
        load.ask_to_stop()
        result = load.finish(time.monotonic() + 10)
    assert result.asked_to_stop and result.exit_code == 0
    assert result.final == {"done": True, "t_s": 1.0, "sent": 5}
