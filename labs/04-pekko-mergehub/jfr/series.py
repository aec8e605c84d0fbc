#!/usr/bin/env python3
"""Turn the run's JFR recording into small CSV files the notebook reads without a JDK.

    series.py RECORDING OUT_DIR

Reads the recording with the JDK's own `jfr print --json` and writes
- OUT_DIR/jfr-gc-heap.csv: `uptime_s,when,heap_used_bytes` for every jdk.GCHeapSummary
  (before and after each collection), the JVM's continuous view of its heap;
- OUT_DIR/jfr-alloc.csv: `class,samples,weight_bytes` for jdk.ObjectAllocationSample,
  the classes allocated most by sampled weight;
- OUT_DIR/jfr-old-objects.txt: jdk.OldObjectSample, JFR's leak detector: the sampled
  objects still alive at the dump, counted by class, by GC root and by the classes on
  their paths from a GC root, then `jfr print`'s own text of the three samples with the
  longest paths. Counts only: which class matters is the reader's question.
Times are seconds since the JVM started (jdk.JVMInformation), so they line up with the
`jvm_uptime_ms` series the harness samples from /metrics. Prints a one-line summary.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path


def events(recording: Path, names: str) -> list[dict]:
    out = subprocess.run(
        ["jfr", "print", "--json", "--events", names, str(recording)],
        capture_output=True, check=True, text=True,
    ).stdout
    return json.loads(out)["recording"]["events"]


def seconds(stamp: str) -> float:
    # JFR prints nanoseconds ("...12:00:01.123456789+00:00"); datetime takes microseconds.
    head, dot, rest = stamp.partition(".")
    if dot:
        digits = "".join(c for c in rest if c.isdigit())
        zone = rest[len(digits):]
        stamp = f"{head}.{digits[:6]}{zone}"
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def main(recording: Path, out_dir: Path) -> None:
    info = events(recording, "jdk.JVMInformation")
    jvm_start = seconds(info[0]["values"]["jvmStartTime"])
    heap = events(recording, "jdk.GCHeapSummary")
    with (out_dir / "jfr-gc-heap.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["uptime_s", "when", "heap_used_bytes"])
        for e in heap:
            v = e["values"]
            w.writerow([round(seconds(v["startTime"]) - jvm_start, 3), v["when"], v["heapUsed"]])
    samples: Counter[str] = Counter()
    weights: Counter[str] = Counter()
    for e in events(recording, "jdk.ObjectAllocationSample"):
        v = e["values"]
        name = v["objectClass"]["name"] if v.get("objectClass") else "?"
        samples[name] += 1
        weights[name] += int(v.get("weight") or 0)
    with (out_dir / "jfr-alloc.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["class", "samples", "weight_bytes"])
        for name, weight in weights.most_common(40):
            w.writerow([name, samples[name], weight])
    old = old_objects(recording, out_dir / "jfr-old-objects.txt")
    after = sum(1 for e in heap if e["values"]["when"] == "After GC")
    print(f"{after} collections, {sum(samples.values())} allocation samples, {old} old-object samples")


def chain(obj: dict | None) -> list[str]:
    """Class names along an OldObjectSample's reference chain, sampled object first."""
    names: list[str] = []
    while isinstance(obj, dict):
        kind = obj.get("type")
        if isinstance(kind, dict) and kind.get("name"):
            names.append(kind["name"])
        ref = obj.get("referrer")
        obj = ref.get("object") if isinstance(ref, dict) else None
    return names


def old_objects(recording: Path, target: Path) -> int:
    samples = events(recording, "jdk.OldObjectSample")
    by_class: Counter[str] = Counter()
    by_root: Counter[str] = Counter()
    on_path: Counter[str] = Counter()
    lengths: list[int] = []
    for e in samples:
        v = e["values"]
        names = chain(v.get("object"))
        by_class[names[0] if names else "?"] += 1
        root = v.get("root") or {}
        by_root[f"{root.get('system') or '?'} / {root.get('type') or '?'}"] += 1
        # Each class once per sample: how many samples' paths hold it.
        on_path.update(set(names))
        lengths.append(len(names))
    text = subprocess.run(
        ["jfr", "print", "--events", "jdk.OldObjectSample", "--stack-depth", "8", str(recording)],
        capture_output=True, check=True, text=True,
    ).stdout
    blocks = text.split("jdk.OldObjectSample {")[1:]
    # `jfr print` keeps the recording's order, as `--json` does: the blocks pair with the
    # samples, so the longest paths can be picked by their measured length.
    longest = sorted(range(len(blocks)), key=lambda i: -lengths[i] if i < len(lengths) else 0)[:3]
    with target.open("w") as f:
        f.write(f"# jdk.OldObjectSample: {len(samples)} live sampled objects at the dump\n")
        f.write("# by class of the sampled object\n")
        for name, n in by_class.most_common(15):
            f.write(f"{n:6d}  {name}\n")
        f.write("# by GC root (system / type)\n")
        for name, n in by_root.most_common():
            f.write(f"{n:6d}  {name}\n")
        f.write("# by class on the path from a GC root (samples whose path holds it)\n")
        for name, n in on_path.most_common(15):
            f.write(f"{n:6d}  {name}\n")
        f.write("# the three samples with the longest paths, as jfr print shows them\n")
        for i in sorted(longest):
            f.write("\njdk.OldObjectSample {" + blocks[i].rstrip() + "\n")
    return len(samples)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]))
