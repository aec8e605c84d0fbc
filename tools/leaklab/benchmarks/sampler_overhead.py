"""Sampler overhead: CPU the harness spends sampling a lab's service at 10 Hz.

Budget (DESIGN.md section 7): under 2% of one core. Starts the lab's fixed variant
with no load, runs every sampler of its lab.toml at the given rate for the given time,
and reports the harness's CPU time (user + system) as a share of one core, and the
service's own CPU over the same time (what answering the probes costs it).

    .venv/bin/python tools/leaklab/benchmarks/sampler_overhead.py 01 --hz 10 --seconds 30
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

import psutil

from leaklab.load import LoadProgram
from leaklab.procs import ProcessGroup
from leaklab.runner import make_samplers, serving
from leaklab.samplers import Recorder
from leaklab.spec import load_lab


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("lab")
    parser.add_argument("--hz", type=float, default=10)
    parser.add_argument("--seconds", type=float, default=30)
    args = parser.parse_args()
    lab = load_lab(args.lab)
    every = 1 / args.hz
    lab = dataclasses.replace(
        lab,
        sample_interval_s=every,
        samplers=tuple(dataclasses.replace(s, interval_s=every) for s in lab.samplers),
    )
    with serving(lab, "fixed") as (setup, running):
        recorder = Recorder()
        idle_load = LoadProgram(ProcessGroup(), recorder)  # never started: no load pid
        samplers = make_samplers(setup, recorder, running, idle_load, lambda: None)
        assert running.service is not None, "a listening lab is needed"
        svc = psutil.Process(running.service.pid)
        me0, svc0, t0 = os.times(), svc.cpu_times(), time.monotonic()
        for s in samplers:
            s.start()
        time.sleep(args.seconds)
        for s in samplers:
            s.stop()
        me1, svc1, wall = os.times(), svc.cpu_times(), time.monotonic() - t0
    harness = (me1.user + me1.system - me0.user - me0.system) / wall * 100
    service_cpu = (svc1.user + svc1.system - svc0.user - svc0.system) / wall * 100
    print(
        f"{len(samplers)} samplers at {args.hz:g} Hz for {wall:.0f} s, {len(recorder.rows)} samples"
    )
    print(f"harness CPU: {harness:.2f}% of one core (budget: < 2%)")
    print(f"service CPU while idle and sampled: {service_cpu:.2f}% of one core")


if __name__ == "__main__":
    main()
