"""Self-driving labs (no [load]) with [[aux]] processes: a whole run, and every way
one can fail. Each failure stops every process (no orphans) and writes nothing."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import (
    broken_grows_fixed_stays_flat,
    fake_processes,
    git,
    interrupt,
    publish,
    quiet,
    start_run,
)

from leaklab.errors import LeakLabError
from leaklab.runner import RunOptions, run
from leaklab.spec import Command, load_lab

LAB = Path(__file__).parent / "selfdrivelab"
SLUG = "91-selfdrive"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A git repo holding labs/91-selfdrive; fails the test if any process outlives it."""
    root = tmp_path / "repo"
    lab = root / "labs" / SLUG
    (lab / "service").mkdir(parents=True)
    (root / "tools" / "leaklab").mkdir(parents=True)
    (root / "solutions" / SLUG).mkdir(parents=True)
    shutil.copy(LAB / "lab.toml", lab / "lab.toml")
    for name in ("client.py", "broker.py"):
        shutil.copy(LAB / name, lab / "service" / name)
    shutil.copy(LAB / "01-release.patch", root / "solutions" / SLUG / "01-release.patch")
    shutil.copy(LAB / "answer.toml", root / "solutions" / SLUG / "answer.toml")
    git(root, "init", "-q")
    publish(root, "self-driving lab")
    monkeypatch.setenv("LEAKLAB_ROOT", str(root))
    yield root
    survivors = [p for p in fake_processes(root) if p.pid != os.getpid()]
    for proc in survivors:
        proc.kill()
    assert not survivors, f"orphan processes: {[p.info['cmdline'] for p in survivors]}"


def written(root: Path) -> list[Path]:
    """Everything a run left in its dataset folder (including temporary files)."""
    folder = root / ".leaklab" / "runs" / SLUG
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name != "logs")


def test_the_lab_parses_as_self_driving(repo: Path) -> None:
    lab = load_lab("91", repo)
    assert lab.self_driving and lab.load.build == ()
    assert [a.name for a in lab.aux] == ["broker"] and lab.aux[0].ready.tcp
    assert not lab.service.ready.tcp and lab.service.max_s == 6
    assert lab.params["workload"].startswith("--duration {duration}")
    assert lab.samplers[0].time_field == "t_s"


def test_splat_placeholder_expands_to_several_arguments() -> None:
    values = {"workload": "--mode burst --messages {n}", "n": "40", "port": "7"}
    cmd = Command(("prog", "--port", "{port}", "{*workload}", "--end"))
    assert cmd.render(values) == [
        "prog",
        "--port",
        "7",
        "--mode",
        "burst",
        "--messages",
        "40",
        "--end",
    ]
    assert Command(("{*workload}",)).render({"workload": "'a b' c"}) == ["a b", "c"]


def test_broken_grows_fixed_does_not(repo: Path) -> None:
    broken, _, _ = broken_grows_fixed_stays_flat(load_lab("91", repo))
    series = set(broken.data.frame["series"])
    assert {"rss_bytes", "held_bytes", "broker_rss_bytes", "load_sent", "load_acked"} <= series
    assert "load_rss_bytes" not in series  # no separate load program
    meta = broken.data.meta
    assert meta["mode"] == "self-driving" and meta["load_result"]["done"] is True
    # The steady window ends where the client said its load ended, before the drain.
    assert meta["phases"]["load_s"] == pytest.approx(meta["load_result"]["load_end_s"], abs=1e-3)
    assert meta["phases"]["exit_s"] >= meta["phases"]["load_s"] + 0.4
    assert meta["commands"]["load"] is None and "broker.py" in meta["commands"]["aux_broker"]
    assert meta["peaks"]["broker_rss_bytes"] > 0
    port = meta["commands"]["aux_broker"].split()[-2]
    assert "--duration 2 --mode normal" in meta["commands"]["service"]
    # held bytes carry the client's own clock: 0.02 s apart, not the 0.5 s poll interval
    held = broken.data.series("held_bytes")
    assert len(held) > 40 and held["t_s"].diff().median() < 0.1
    # The command snapshot ran in the run folder, with its env filled in.
    artefacts = broken.json.parent / "broken"
    assert (artefacts / "profile.json").read_text() == "profile"
    assert (artefacts / "snapshot.txt").read_text().strip() == f"port {port}"


def test_workload_overrides_reach_the_service(repo: Path) -> None:
    lab = load_lab("91", repo)
    result = run(lab, RunOptions("fixed", params={"workload": "--duration 1"}), log=quiet)
    assert result.data.meta["commands"]["service"].endswith("--duration 1")
    assert result.data.meta["phases"]["load_s"] < 1.5


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"broker_mode": "never-ready"}, r"the broker \(aux\) was not ready within 3 s"),
        ({"broker_mode": "crash"}, r"the broker \(aux\) exited with code 3 before it was ready"),
        ({"broker_mode": "die-later"}, r"the broker \(aux\) exited with code 4 during the run"),
        ({"client_mode": "fail"}, r"the service exited with code 1;[\s\S]*delivery failed"),
        ({"client_mode": "no-done"}, r"exited without its final progress line"),
        ({"client_mode": "hang"}, r"the service did not exit by itself within 6 s"),
    ],
)
def test_every_failure_stops_everything_and_writes_nothing(
    repo: Path, params: dict[str, str], message: str
) -> None:
    lab = load_lab("91", repo)
    if params.get("client_mode") == "hang":
        params = {**params, "duration": "30"}
    with pytest.raises(LeakLabError, match=message):
        run(lab, RunOptions("broken", params=params), log=quiet)
    assert written(repo) == []


def test_ctrl_c_stops_aux_and_service_and_writes_nothing(repo: Path) -> None:
    # wait until the broker is up and the client is running
    proc, output = start_run(repo, "91", ready="drives itself")
    time.sleep(1.5)
    children = psutil.Process(proc.pid).children(recursive=True)
    assert len(children) >= 4, children  # broker + its helper, client + its helper
    interrupt(proc, output)
    assert written(repo) == []
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
