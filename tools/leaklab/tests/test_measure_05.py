"""Lab 05's measure.py: the saturation run's JVM options and the repeated runs' order.

The saturation comparison is repeated with the heap fixed (`-Xms` = `-Xmx`, so G1 does
not grow it mid-run) and a GC log (issue 37, item 1). The options are checked on a real
JVM: its final flags and the log it writes, not the command line's text alone.
"""

from __future__ import annotations

import functools
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from leaklab.paths import repo_root

SCRIPT = repo_root() / "labs" / "05-zio-tokio-fanout" / "measure" / "measure.py"


@functools.cache
def _measure() -> ModuleType:
    spec = importlib.util.spec_from_file_location("measure_05", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


# A patch variant's run folder is named after it, `patch:FILE` with its colon, and -Xlog
# reads an unquoted colon as the end of the file name.
@pytest.mark.parametrize("folder", ["fixed", "patch:solutions/x.patch"])
def test_the_jvm_gets_its_heap_fixed_and_writes_a_gc_log(tmp_path: Path, folder: str) -> None:
    java = shutil.which("java")
    if java is None:
        pytest.fail("no java on PATH: run scripts/setup --lab 05")
    log = tmp_path / folder / "gc.log"
    log.parent.mkdir(parents=True)
    argv = _measure().jvm_options(["java", "-Xmx64m", "-XX:+UseG1GC"], True, log)
    flags = _final_flags(java, argv)
    assert flags["MaxHeapSize"] == flags["InitialHeapSize"] == str(64 * 1024 * 1024)
    assert "Using G1" in log.read_text()


def test_other_commands_and_the_defaults_are_left_as_they_are() -> None:
    measure = _measure()
    tokio = ["/build/replay-tokio", "--port", "1"]
    assert measure.jvm_options(tokio, True, Path("/tmp/gc.log")) == tokio
    jvm = ["java", "-Xmx256m", "-XX:+UseG1GC"]
    assert measure.jvm_options(jvm, False, None) == jvm


def test_a_jvm_without_a_maximum_heap_is_refused() -> None:
    measure = _measure()
    with pytest.raises(measure.LeakLabError):
        measure.jvm_options(["java", "-XX:+UseG1GC"], True, None)


def test_repeats_interleave_the_variants_and_are_numbered() -> None:
    schedule = _measure().schedule
    assert schedule(["fixed", "tokio"], 1) == [("fixed", "fixed"), ("tokio", "tokio")]
    assert schedule(["fixed", "tokio"], 2) == [
        ("fixed", "fixed-r1"),
        ("tokio", "tokio-r1"),
        ("fixed", "fixed-r2"),
        ("tokio", "tokio-r2"),
    ]


def test_the_tuned_arm_runs_the_jvm_on_zgc_instead_of_g1(tmp_path: Path) -> None:
    java = shutil.which("java")
    if java is None:
        pytest.fail("no java on PATH: run scripts/setup --lab 05")
    argv = _measure().jvm_options(["java", "-Xmx64m", "-XX:+UseG1GC"], True, None, "zgc")
    flags = _final_flags(java, argv)
    assert (flags["UseZGC"], flags["UseG1GC"]) == ("true", "false")
    assert flags["MaxHeapSize"] == flags["InitialHeapSize"] == str(64 * 1024 * 1024)


def _final_flags(java: str, argv: list[str]) -> dict[str, str]:
    """The JVM's final flags for these options, as `-XX:+PrintFlagsFinal` prints them."""
    done = subprocess.run(
        [java, *argv[1:], "-XX:+PrintFlagsFinal", "-version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return {
        parts[1]: parts[3]
        for line in done.stdout.splitlines()
        if len(parts := line.split()) >= 4 and parts[2] == "="
    }
