"""Lab 03's README: the remote-shell command works as printed (issue 17).

The README tells the learner to attach a shell to the running service with
`iex --sname shell --remsh socket_api_<port>` and to call the node's own diagnostics
there. IEx ignores a remote shell whose input is not a terminal (piped input gets no
shell at all), so this test gives it one: a pseudo-terminal made the controlling
terminal of a new session (`setsid --ctty`), as a terminal emulator does. It starts
the `broken` service as a run starts it (`runner.serving`: a named node,
`socket_api_<port>`), runs the README's command with the port filled in, evaluates two
expressions on the service's node, leaves the way the README says (Ctrl+C twice) and
checks that the service is still up. A few seconds once the service is built.
"""

from __future__ import annotations

import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import time
import urllib.request

import pytest

from leaklab.paths import repo_root
from leaklab.runner import serving
from leaklab.spec import load_lab

pytestmark = pytest.mark.skipif(
    shutil.which("iex") is None or shutil.which("setsid") is None,
    reason="needs Elixir (iex) and util-linux's setsid",
)

# A command line of the README that attaches a remote shell to the service's node.
PRINTED = re.compile(r"^(iex --sname \S+ --remsh socket_api\S*)$", re.MULTILINE)
# Escape sequences a line editor draws with (cursor moves, colours).
ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])")
STEP_S = 20.0


class Terminal:
    """A child process on a pseudo-terminal: what it has written, and typing into it."""

    def __init__(self, argv: list[str]) -> None:
        self.master, slave = os.openpty()
        env = {**os.environ, "TERM": "xterm"}
        # Not a process group leader, so setsid(1) makes the session without forking
        # and the child keeps this pid: the whole session can be killed by it.
        self.child = subprocess.Popen(
            ["setsid", "--ctty", *argv], stdin=slave, stdout=slave, stderr=slave, env=env
        )
        os.close(slave)
        self.text = ""

    def expect(self, pattern: str, timeout: float = STEP_S) -> re.Match[str]:
        """Reads until `pattern` appears in the output since the last match."""
        deadline = time.monotonic() + timeout
        while True:
            found = re.search(pattern, self.text)
            if found:
                self.text = self.text[found.end() :]
                return found
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                raise AssertionError(f"no {pattern!r} in the shell's output:\n{self.text}")

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child has closed the terminal
            return False
        self.text += ESCAPES.sub("", data.decode(errors="replace"))
        return bool(data)

    def close(self) -> None:
        if self.child.poll() is None:
            os.killpg(self.child.pid, signal.SIGKILL)
            self.child.wait()
        os.close(self.master)


def printed_commands() -> list[str]:
    readme = (repo_root() / "labs" / "03-elixir-refc-binaries" / "README.md").read_text()
    return PRINTED.findall(readme)


def test_the_readme_prints_one_remote_shell_for_both_ways_of_starting_the_service() -> None:
    # One command for both ways of starting the service: the harness names the node
    # socket_api_<port>, and the README starts it by hand the same way, so no fixed port or
    # node name collides with anything else on the machine (issue 31).
    assert printed_commands() == ["iex --sname shell --remsh socket_api_<port>"]


def test_the_printed_remote_shell_attaches_to_a_run_and_leaves_it_running() -> None:
    lab = load_lab("03", repo_root())
    command = next(c for c in printed_commands() if "<port>" in c)
    with serving(lab, "broken", log=lambda _: None) as (setup, _up):
        port = setup.values["port"]
        shell = Terminal(shlex.split(command.replace("<port>", port)))
        try:
            prompt = rf"iex\(socket_api_{port}@[^)]+\)\d+> "
            shell.expect(prompt)
            shell.type("node()\r")
            shell.expect(rf':"?socket_api_{port}@')
            shell.expect(prompt)
            # The node's own bin_leak, as the README's discovery step calls it.
            shell.type("SocketApi.Diagnostics.bin_leak(3) |> length()\r")
            shell.expect(r"\n3\r?\n")
            shell.expect(prompt)
            # Leaving: Ctrl+C opens the break menu of the shell's own node, a second
            # one ends that node; the service's node runs on.
            shell.type("\x03")
            shell.expect(r"BREAK")
            shell.type("\x03")
            assert shell.child.wait(timeout=STEP_S) is not None
        finally:
            shell.close()
        with urllib.request.urlopen(f"{setup.values['url']}/healthz", timeout=5) as answer:
            assert answer.status == 200
