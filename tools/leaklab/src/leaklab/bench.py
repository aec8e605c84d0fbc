"""`leaklab bench LAB`: the lab's benchmark on broken and fixed, side by side.

The per-operation view complements a run's slope: bytes and allocations per operation
on each path, from the runtime's own benchmark tool (`go test -bench -benchmem` for
lab 01), compared with the lab's compare tool (benchstat) when it is installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from leaklab import toolchains
from leaklab.build import build_variant
from leaklab.errors import LeakLabError
from leaklab.paths import work_dir
from leaklab.spec import Lab

VARIANTS = ("broken", "fixed")


def run_bench(lab: Lab, variant: str, dest: Path) -> Path:
    if lab.bench is None:
        raise LeakLabError(f"lab {lab.slug} has no [bench] in lab.toml", "nothing to run")
    built = build_variant(lab, variant, log=lambda line: print(line, file=sys.stderr))
    argv = lab.bench.command.render({"src": str(built.src), "out": str(built.out)})
    print(f"{lab.slug} {variant}: {' '.join(argv)}", file=sys.stderr)
    env = os.environ | toolchains.env()  # `go test -bench` on the pinned Go
    result = subprocess.run(
        argv, cwd=built.src, env=env, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise LeakLabError(
            f"the benchmark failed on {variant}:\n{result.stdout[-2000:]}{result.stderr[-2000:]}",
            "run it by hand in " + str(built.src),
        )
    target = dest / f"bench-{variant}.txt"
    target.write_text(result.stdout)
    return target


def compare(lab: Lab, files: dict[str, Path]) -> str:
    assert lab.bench is not None
    if lab.bench.compare is None:
        return "\n".join(f.read_text() for f in files.values())
    values = {"bin": str(work_dir(lab.root) / "bin"), **{k: str(v) for k, v in files.items()}}
    argv = lab.bench.compare.render(values)
    try:
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return f"({argv[0]} not installed: run scripts/setup)\n" + "\n".join(
            f.read_text() for f in files.values()
        )
    return result.stdout or result.stderr


def bench(lab: Lab, capture: bool) -> tuple[str, list[Path]]:
    """Benchmark broken and fixed; the comparison and the files written (into
    datasets/<lab>/ with `capture`, else .leaklab/reports/<lab>/)."""
    if capture:
        dest = lab.root / "datasets" / lab.slug
    else:
        dest = work_dir(lab.root) / "reports" / lab.slug
    dest.mkdir(parents=True, exist_ok=True)
    files = {variant: run_bench(lab, variant, dest) for variant in VARIANTS}
    comparison = compare(lab, files)
    (dest / "bench-compare.txt").write_text(comparison)
    return comparison, [*files.values(), dest / "bench-compare.txt"]
