"""Faults around a run: interrupts during snapshots, a harness killed with SIGKILL,
ports in TIME-WAIT, missing tools, a silent service. Nothing may be left running."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import fake_processes, interrupt, start_run

from leaklab import doctor, procs, runner
from leaklab.errors import LeakLabError
from leaklab.procs import Ledger, Probe, ProcessGroup, port_in_use, reap, wait_ready
from leaklab.runner import RunOptions, run
from leaklab.spec import load_lab

# A snapshot whose command leaves a grandchild running: bash, and under it a pipeline.
STUCK_SNAPSHOT = """
[[snapshots]]
name = "stuck.txt"
command = ["bash", "-c", "sleep 300 | cat"]
timeout_s = {timeout}
"""


def quiet(_: str) -> None:
    pass


def add_stuck_snapshot(root: Path, timeout_s: float) -> None:
    toml = root / "labs" / "90-fake" / "lab.toml"
    toml.write_text(toml.read_text() + STUCK_SNAPSHOT.format(timeout=timeout_s))


def logs(root: Path) -> list[Path]:
    folder = root / ".leaklab" / "runs" / "90-fake" / "logs"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def wait_until_gone(root: Path, timeout_s: float = 10) -> list[str]:
    """The command lines of the fake repo's processes still alive after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while (left := fake_processes(root)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [" ".join(p.info["cmdline"] or []) for p in left]


def test_ctrl_c_during_a_snapshot_stops_its_whole_tree_and_writes_nothing(
    no_orphans: Path,
) -> None:
    add_stuck_snapshot(no_orphans, timeout_s=120)
    proc, output = start_run(no_orphans, "90", ready="snapshot stuck.txt ...", duration="1")
    assert "snapshot stuck.txt" in "".join(output), "".join(output)
    time.sleep(1)  # bash has started sleep and cat
    interrupt(proc, output)
    assert wait_until_gone(no_orphans, timeout_s=2) == []
    assert logs(no_orphans) == []  # "nothing written" is true: no log folder either


def test_a_snapshot_that_times_out_is_stopped_with_everything_it_started(
    no_orphans: Path,
) -> None:
    add_stuck_snapshot(no_orphans, timeout_s=1)
    lines: list[str] = []
    run(load_lab("90", no_orphans), RunOptions("broken"), log=lines.append)
    assert any("snapshot stuck.txt failed: did not finish within 1 s" in x for x in lines)
    assert wait_until_gone(no_orphans, timeout_s=2) == []


def test_a_failed_run_keeps_its_logs_and_says_where(no_orphans: Path) -> None:
    with pytest.raises(LeakLabError) as failed:
        run(load_lab("90", no_orphans), RunOptions("broken", params={"rate": "-1"}), log=quiet)
    [folder] = logs(no_orphans)
    assert str(folder / "load.log") in str(failed.value)


@pytest.mark.parametrize("reaper", ["next run", "doctor"])
def test_what_a_killed_harness_left_is_reaped(no_orphans: Path, reaper: str) -> None:
    proc, output = start_run(no_orphans, "90", ready="service ready")
    assert "service ready" in "".join(output), "".join(output)
    proc.kill()  # SIGKILL: the harness cannot clean up
    proc.communicate(timeout=10)
    time.sleep(1.5)  # the load program dies of its closed stdout; the service does not
    survivors = fake_processes(no_orphans)
    assert any("server.py" in " ".join(p.info["cmdline"] or []) for p in survivors)

    lines: list[str] = []
    if reaper == "next run":
        runner.reap_leftovers(no_orphans, lines.append)
    else:
        check = doctor.leftovers_check(no_orphans)
        lines.append(check.detail)
    [line] = lines
    assert "stopped" in line and "server.py" in line, line
    assert wait_until_gone(no_orphans) == []
    assert list(procs.ledger_folder(no_orphans).glob("*.json")) == []


def test_a_clean_run_leaves_no_pid_file(no_orphans: Path) -> None:
    run(load_lab("90", no_orphans), RunOptions("broken"), log=quiet)
    assert list(procs.ledger_folder(no_orphans).glob("*.json")) == []


def test_reap_leaves_live_runs_and_recycled_pids_alone(tmp_path: Path) -> None:
    folder = tmp_path / "pids"
    with ProcessGroup() as group:
        child = group.start(["sleep", "30"], cwd=tmp_path)
        # A live harness's pid file (ours): another run in progress, not to be touched.
        with Ledger(folder / "live.json") as live:
            live.add(child.pid, ["sleep", "30"])
            assert reap(folder) == []
        # A dead harness's file whose group id now belongs to another process (the
        # recorded start time differs): a recycled pid, never killed.
        started = live.groups[child.pid]["started"]
        dead = {"owner": {"pid": child.pid, "started": started - 100}, "groups": {}}
        dead["groups"][str(child.pid)] = {"started": started - 50, "command": "sleep 30"}
        (folder / "dead.json").write_text(json.dumps(dead))
        assert reap(folder) == []
        assert child.poll() is None
        assert not (folder / "dead.json").exists()


def test_a_port_in_time_wait_is_free(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        server_side, _ = listener.accept()
        server_side.close()  # the server closes first: its end goes to TIME-WAIT
        time.sleep(0.1)
        client.close()
    time.sleep(0.1)
    with socket.socket() as plain, pytest.raises(OSError):
        plain.bind(("127.0.0.1", port))  # the premise: a bind without SO_REUSEADDR fails
    assert not port_in_use(port)


def test_a_port_with_a_listener_is_in_use() -> None:
    with socket.socket() as busy:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert port_in_use(busy.getsockname()[1])


def test_provenance_without_git_says_unknown(
    fake_repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert runner.git_provenance(fake_repo, "90-fake")["git_dirty"] is False
    monkeypatch.setenv("PATH", str(tmp_path))
    assert runner.git_provenance(fake_repo, "90-fake") == {
        "git_commit": "unknown",
        "git_dirty": None,
    }


def test_a_missing_tool_is_named_not_blamed_on_the_build(
    no_orphans: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    toml = no_orphans / "labs" / "90-fake" / "lab.toml"
    toml.write_text(
        toml.read_text().replace('command = ["python3", "{build}', 'command = ["java", "{build}')
    )
    # The build still works (python3 and git are there); only java is missing.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(Path(sys.executable).resolve())
    git = subprocess.run(["which", "git"], capture_output=True, text=True, check=True)
    (bin_dir / "git").symlink_to(git.stdout.strip())
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(LeakLabError) as failed:
        run(load_lab("90", no_orphans), RunOptions("broken"), log=quiet)
    assert "cannot start java: it is not installed" in failed.value.what
    assert failed.value.fix and "JDK 25" in failed.value.fix
    assert "build the lab first" not in str(failed.value)


def test_a_missing_file_is_a_missing_build(tmp_path: Path) -> None:
    with ProcessGroup() as group, pytest.raises(LeakLabError, match="build the lab first"):
        group.start([str(tmp_path / "out" / "server")], cwd=tmp_path)
    with ProcessGroup() as group, pytest.raises(LeakLabError, match="not installed"):
        group.start(["leaklab-no-such-tool"], cwd=tmp_path)


@pytest.mark.parametrize("probe", [True, False])
def test_a_silent_service_says_its_log_is_empty(tmp_path: Path, probe: bool) -> None:
    argv = ["sleep", "10"] if probe else ["true"]
    with ProcessGroup() as group:
        child = group.start(argv, cwd=tmp_path)
        with pytest.raises(LeakLabError) as failed:
            wait_ready(child, Probe(procs.free_port(), timeout_s=0.3, enabled=probe), lambda: "")
    assert "(its log is empty" in failed.value.what
    assert not failed.value.what.rstrip().endswith(":")


def test_helper_commands_stop_their_tree_on_a_timeout(tmp_path: Path) -> None:
    with ProcessGroup() as group, pytest.raises(subprocess.TimeoutExpired):
        group.run(["bash", "-c", "sleep 300 | cat"], cwd=tmp_path, timeout_s=0.5)
    assert not group.children
    assert wait_until_gone(tmp_path, timeout_s=1) == []  # sleep and cat (cwd tmp_path)
