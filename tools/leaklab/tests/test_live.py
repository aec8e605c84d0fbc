"""The live view (`leaklab.live`): the chart in a real terminal, the plain lines elsewhere,
and the notebook's picture of a finished and of a running run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from leaklab import live
from leaklab.dataset import read_folder
from leaklab.spec import load_lab


def tmux(server: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["tmux", "-L", server, *args], capture_output=True, text=True, timeout=30, check=False
    )


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_a_run_in_a_terminal_draws_the_chart_and_the_running_verdict(no_orphans: Path) -> None:
    """A real run of the fake lab in a tmux pane (a real terminal, 100x40): a frame
    captured mid-run holds the chart's axes, the fit's key and the running verdict."""
    server = f"leaklab-test-{os.getpid()}"
    command = (
        f"LEAKLAB_ROOT={no_orphans} {sys.executable} -m leaklab run 90 --duration 8 "
        f"--fixed-duration; sleep 5"
    )
    tmux(server, "new-session", "-d", "-x", "100", "-y", "40", "-s", "run", command)
    frames: list[str] = []
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            frame = tmux(server, "capture-pane", "-p", "-t", "run").stdout
            frames.append(frame)
            if "verdict:" in frame and "slope so far" in frame:
                break
            time.sleep(0.5)
    finally:
        tmux(server, "kill-server")  # SIGHUP: the run stops everything it started
        time.sleep(2)
    frame = frames[-1]
    assert "held bytes" in frame, frame  # the verdict series' title
    assert "┤" in frame and "└" in frame, frame  # plotext's axes
    assert "slope so far" in frame and "95% band" in frame, frame
    assert "verdict:" in frame and "RSS (MB)" in frame, frame
    verdicts = ("keep measuring", "grows", "flat")
    assert any(word in frame for word in verdicts), frame  # the running verdict


def test_without_a_terminal_a_run_prints_lines_not_frames(fake_repo: Path) -> None:
    """Piped (CI), even with FORCE_COLOR set as an autograder sets it: no redrawn frames
    (no carriage returns, no cursor moves), and a plain line with the running verdict."""
    result = subprocess.run(
        [sys.executable, "-m", "leaklab", "run", "90", "--duration", "4"],
        env={**os.environ, "LEAKLAB_ROOT": str(fake_repo), "FORCE_COLOR": "true"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "\r" not in result.stderr and "\x1b[2K" not in result.stderr, result.stderr[-500:]
    assert "┤" not in result.stderr  # no chart
    assert "verdict:" in result.stderr, result.stderr


def test_a_notebook_draws_a_finished_run_and_a_running_one(fake_repo: Path) -> None:
    """`leaklab.live.figure` on a dataset and on the run's folder (as it is while the run
    goes on: the live view's files) draws the series, the fit and the band."""
    from leaklab.runner import RunOptions, run

    lab = load_lab("90")
    result = run(lab, RunOptions("broken", {"duration": "4"}), log=lambda _: None)
    fig = live.figure(result.data)
    ax = fig.axes[0]
    assert len(ax.lines) >= 2 and ax.collections, "series, fit and band"
    assert "grows" in ax.get_title() or "measuring" in ax.get_title()
    # The run's log folder keeps what the live view wrote while the run went on.
    logs = sorted((fake_repo / ".leaklab" / "runs" / lab.slug / "logs").iterdir())
    running = live.read_folder(logs[-1])
    assert len(running.t) > 10 and running.fit is not None
    assert running.fit.slope > 0  # the broken fake keeps every body it receives
    fig = live.figure(logs[-1])
    assert fig.axes[0].get_title().startswith("90-fake broken")
    assert [d.name for d in read_folder(fake_repo / ".leaklab" / "runs" / lab.slug)] == ["broken"]


def test_a_notebook_shows_a_runs_memory_limit_and_its_kill() -> None:
    """Lab 01's broken run under fleet-server's 154 MiB limit: the limit on the RSS
    panel, the kill on both, from the dataset alone."""
    lab = load_lab("01")
    fig = live.figure(lab.dataset_dir / "memory-limit" / "broken-154mi.json")
    heap, rss = fig.axes[:2]
    texts = [t.get_text() for ax in (heap, rss) for t in ax.texts]
    assert "OOM kill at 72 s" in texts and "memory limit 154 MiB" in texts, texts
    assert heap.get_title() == "01-go-bulk-abort broken-154mi: grows (95%, the whole window)"
