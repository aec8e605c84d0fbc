"""`leaklab run NN --memory-limit SIZE`: the service in a memory cgroup, its OOM kill
recorded beside the predicted time; bad input refused before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import publish

from leaklab import dataset, memlimit, report
from leaklab.spec import load_lab

# The fake service keeps every request body (40 requests/s of 100 KB in the fake load):
# about 240 MB/min, so a 64 MiB limit is reached well within 40 s; the fixed one holds
# nothing and stays near its RSS at rest.
LIMIT = "64M"


def leaklab(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "leaklab", *args],
        env={**os.environ, "LEAKLAB_ROOT": str(root), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def cgroup_here() -> bool:
    group, _ = memlimit.create(64 * 2**20, f"leaklab-probe-{os.getpid()}")
    if group is None:
        return False
    group.remove()
    return True


def test_broken_is_killed_near_its_predicted_time_and_fixed_lives(no_orphans: Path) -> None:
    root = no_orphans
    broken = leaklab(root, "run", "90", "--duration", "40", "--memory-limit", LIMIT)
    assert broken.returncode == 0, broken.stderr[-2000:]
    lab = load_lab("90")
    ds = dataset.read(root / ".leaklab" / "runs" / lab.slug / "broken.json")
    doc = ds.meta["memory_limit"]
    assert doc["bytes"] == 64 * 2**20
    if not cgroup_here():  # the machine's answer instead: one line, and the run went on
        assert "no writable memory cgroup here" in broken.stderr
        assert doc["applied"] is False and doc["oom_kill_s"] is None
        return
    assert doc["applied"] is True, broken.stderr
    assert not Path(doc["cgroup"].split(" ", 1)[1]).exists()  # removed after the run
    killed = doc["oom_kill_s"]
    assert killed is not None and killed < 40, broken.stderr[-2000:]
    assert f"OOM-killed at {killed:.1f} s" in broken.stderr
    # The kernel killed it when the memory it charges to the group reached the limit.
    charged = ds.series("cgroup_memory_bytes")["value"]
    assert charged.max() >= 0.9 * 64 * 2**20, charged.max()
    summary = report.summarise(lab, ds)
    assert summary.memory_limit is not None
    assert summary.memory_limit["observed_kill_s"] == killed
    predicted = summary.memory_limit["predicted"]
    assert predicted["series"] == "cgroup_memory_bytes"
    # From the window's first half, before anything was killed: within a couple of
    # seconds of the kill (the fake grows steadily; a real service is noisier).
    assert abs(predicted["at_s"] - killed) < 3, summary.memory_limit
    assert "OOM-killed at" in broken.stdout and "charged memory predicts" in broken.stdout
    assert ds.meta["phases"]["load_s"] <= killed + 0.001  # the window ends at the kill

    fixed = leaklab(root, "run", "90", "-v", "fixed", "--duration", "10", "--memory-limit", LIMIT)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    ds = dataset.read(root / ".leaklab" / "runs" / lab.slug / "fixed.json")
    assert ds.meta["memory_limit"]["applied"] and ds.meta["memory_limit"]["oom_kill_s"] is None
    assert "alive at the end of the load" in fixed.stdout


def test_bad_limits_get_one_line_and_start_nothing(fake_repo: Path) -> None:
    builds = fake_repo / ".leaklab" / "build"
    bad = leaklab(fake_repo, "run", "90", "--memory-limit", "lots")
    assert bad.returncode == 2 and "memory limit 'lots' is not a size" in bad.stderr
    # A lab whose verdict series counts things, not bytes.
    toml = fake_repo / "labs" / "90-fake" / "lab.toml"
    text = toml.read_text().replace(
        'series = { held_bytes = "held.bytes" }',
        'series = { held_bytes = "held.bytes", held_items = "held.bytes" }',
    )
    text = text.replace('verdict_series = "held_bytes"', 'verdict_series = "held_items"')
    text = text.replace(
        'series = ["held_bytes", "rss_bytes"]', 'series = ["held_items", "rss_bytes"]'
    )
    toml.write_text(text)
    publish(fake_repo, "a count as the verdict series")
    count = leaklab(fake_repo, "run", "90", "--memory-limit", "256M")
    assert count.returncode == 2, count.stderr
    assert "verdict series is memory; this lab's is held_items" in count.stderr
    assert not builds.exists()  # nothing built, nothing started


def test_a_limit_below_the_services_idle_rss_is_refused() -> None:
    lab = load_lab("01")
    idle = memlimit.idle_rss(lab.dataset_dir, "broken")
    assert idle is not None and 1e6 < idle[0] < 64e6
    result = leaklab(lab.root, "run", "01", "--memory-limit", "2M")
    assert result.returncode == 2
    assert "is below the service's idle RSS" in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 4  # the error and its fix, wrapped
