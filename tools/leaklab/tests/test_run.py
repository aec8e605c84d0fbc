"""A whole run against the fake lab, and every way a run can fail: nothing left behind."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import broken_grows_fixed_stays_flat, interrupt, quiet, start_run

from leaklab import report
from leaklab.errors import LeakLabError
from leaklab.runner import RunOptions, run
from leaklab.spec import load_lab


def datasets(root: Path) -> list[Path]:
    folder = root / ".leaklab" / "runs" / "90-fake"
    return sorted(folder.glob("*.csv")) + sorted(folder.glob("*.json"))


def test_broken_grows_fixed_does_not(no_orphans: Path) -> None:
    lab = load_lab("90", no_orphans)
    broken, b, f = broken_grows_fixed_stays_flat(lab)
    series = set(broken.data.frame["series"])
    assert broken.data.series("rss_bytes")["t_s"].min() < 0  # the pre-load baseline
    assert {"rss_bytes", "cpu_seconds", "held_bytes", "load_sent", "load_ok"} <= series
    meta = broken.data.meta
    assert meta["variant"] == "broken" and meta["load_result"]["done"] is True
    assert meta["phases"]["load_s"] >= 3
    assert meta["versions"]["python"].startswith("Python")
    assert (broken.json.parent / "broken" / "stats.json").is_file()  # the snapshot
    line = report.separation(lab, [b, f])
    assert line is not None and "do not overlap" in line


def test_an_adaptive_run_stops_the_load_once_the_verdict_is_decided(
    no_orphans: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Looks every second (the fake lab's `look_every_s`) over a 20 s load: each variant
    is decided within a few seconds, the load is stopped, and the dataset says when. A
    load that exits 1 when interrupted, after its final line, is not a failed load."""
    monkeypatch.setenv("FAKE_LOAD_EXIT_1_WHEN_STOPPED", "1")
    lab = load_lab("90", no_orphans)
    for variant, expected in (("broken", "grows"), ("fixed", "flat")):
        opts = RunOptions(variant, params={"duration": "20"}, adaptive=True)
        meta = run(lab, opts, log=quiet).data.meta
        decided = meta["sequential"]
        assert decided["verdict"] == expected, decided
        assert decided["look"] < len(decided["looks"]), decided  # an interim look
        assert meta["load_result"]["done"] is True
        assert meta["phases"]["load_s"] < 10, meta["phases"]


def test_service_that_crashes_at_start(no_orphans: Path) -> None:
    lab = load_lab("90", no_orphans)
    with pytest.raises(LeakLabError, match="exited with code 3 before it was ready"):
        run(lab, RunOptions("broken", params={"mode": "crash"}), log=quiet)
    assert datasets(no_orphans) == []


def test_service_that_never_becomes_ready(no_orphans: Path) -> None:
    toml = no_orphans / "labs" / "90-fake" / "lab.toml"
    toml.write_text(toml.read_text().replace("timeout_s = 5", "timeout_s = 1.5"))
    lab = load_lab("90", no_orphans)
    with pytest.raises(LeakLabError, match="not ready within 2 s"):
        run(lab, RunOptions("broken", params={"mode": "never-ready"}), log=quiet)
    assert datasets(no_orphans) == []


def test_load_that_fails(no_orphans: Path) -> None:
    lab = load_lab("90", no_orphans)
    with pytest.raises(LeakLabError, match="the load program failed"):
        run(lab, RunOptions("broken", params={"rate": "-1"}), log=quiet)
    assert datasets(no_orphans) == []


def test_port_in_use(no_orphans: Path) -> None:
    lab = load_lab("90", no_orphans)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(LeakLabError, match=f"port {port} on 127.0.0.1 is in use"):
            run(lab, RunOptions("broken", port=port), log=quiet)
    assert datasets(no_orphans) == []


def test_ctrl_c_stops_everything_and_writes_nothing(no_orphans: Path) -> None:
    # wait until the service is up and the load is running
    proc, output = start_run(no_orphans, "90", ready="service ready")
    time.sleep(2)
    interrupt(proc, output)
    assert datasets(no_orphans) == []


def test_unknown_lab_is_one_line_and_exit_2(fake_repo: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "leaklab", "run", "77"],
        capture_output=True,
        text=True,
        env={**os.environ, "LEAKLAB_ROOT": str(fake_repo)},
        check=False,
    )
    assert result.returncode == 2
    assert "unknown lab '77'" in result.stderr and "Traceback" not in result.stderr
