"""A bounded fuzz of every lab's service (issue 23): it must stay up, with bounded RSS.

Each test builds the lab's `broken` variant (cached), starts its service (and aux
processes) the way a run does (`runner.serving`), measures its idle RSS, throws
`leaklab.fuzz`'s malformed requests at it for at most FUZZ_S seconds or MAX_REQUESTS
connections on loopback, sampling the RSS of its process tree at 10 Hz, then asserts
that its readiness probe still answers and that the peak RSS stayed under idle + the
lab's margin. Status codes are not asserted: a service may refuse bad input as it
likes, as long as it survives it. Run with `-s` to see each service's figures (requests,
answers, idle and peak RSS).
"""

from __future__ import annotations

import shutil
import socketserver
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from leaklab import doctor, fuzz
from leaklab.build import tail
from leaklab.fuzz import Case, Fuzzer, Surface
from leaklab.paths import repo_root, work_dir
from leaklab.procs import wait_ready
from leaklab.runner import Serving, Setup, probe_for, serving
from leaklab.samplers import Recorder, Sampler, rss_poll, tree_rss
from leaklab.spec import Lab, load_lab

FUZZ_S = 10.0
MAX_REQUESTS = 5000
MB = 1024 * 1024


@dataclass(frozen=True)
class Target:
    """Where a lab's service listens, what it speaks, and how much memory a fuzz may
    cost it above its idle RSS (`margin_mb`, with the reason in `why`)."""

    surface: Surface
    margin_mb: float
    why: str
    aux: str | None = None  # fuzz this aux process instead of the service


TARGETS = {
    "01": Target(
        Surface(body_path="/checkin"),
        64,
        "a Go server holds a goroutine and a few KB of buffers per open connection "
        "(at most ~60 at once here) and the 4 MB bodies it reads; 64 MB is 10x that",
    ),
    "02": Target(
        Surface(http=False, framed=True),
        32,
        "the broker keeps one frame buffer per connection and reads a frame as it "
        "arrives; the largest frame the cases send is 1 MB, so 32 MB is ample",
        aux="broker",
    ),
    "03": Target(
        Surface(body_path="/socket", ws_path="/socket"),
        128,
        "the BEAM allocates per connection process (a 64 KB topic, a 1 MB text "
        "frame) and its allocators keep freed carriers a while; 128 MB over idle",
    ),
    "04": Target(
        Surface(body_path="/events/race-1/locations", ws_path="/events/race-1/subscribe"),
        256,
        "the JVM runs with -Xmx256m: the heap may grow to its cap under the 4 MB "
        "bodies and 1 MB frames, plus off-heap buffers; the cap is the bound",
    ),
    "05": Target(
        Surface(body_path="/replay"),
        256,
        "the JVM runs with -Xmx256m: the heap may grow to its cap, as in lab 04",
    ),
}


def ready_or_skip(lab: Lab) -> None:
    """Skip a lab whose toolchain this machine lacks (`leaklab doctor` says which)."""
    needs = doctor.lab_needs(lab)
    missing = [
        name
        for name, steps in needs.items()
        if any(step in ("build", "service", "aux") for step in steps)
        and not (
            (work_dir(lab.root) / name).is_file()
            if name.startswith("tools/")
            else shutil.which(name)
        )
    ]
    if missing:
        pytest.skip(f"lab {lab.number} needs {', '.join(missing)} (see leaklab doctor)")


def target_process(
    setup: Setup, up: Serving, target: Target
) -> tuple[subprocess.Popen[bytes], Path, int]:
    """The child to fuzz, its log, and its port."""
    watched = next(w for w in up.watched if w.name == target.aux)
    port_key = f"{target.aux}_port" if target.aux else "port"
    return watched.child, watched.log, int(setup.values[port_key])


def still_ready(
    setup: Setup, target: Target, child: subprocess.Popen[bytes], log: Path, port: int
) -> None:
    """The readiness probe answers, as it did at the start (a dead service fails here)."""
    aux = next((a for a in setup.lab.aux if a.name == target.aux), None)
    ready = aux.ready if aux else setup.lab.service.ready
    base = setup.values[f"{target.aux}_url" if target.aux else "url"]
    probe = replace(probe_for(ready, base, port), timeout_s=10)
    wait_ready(child, probe, lambda: tail(log), what="the fuzzed service")


def fuzz_lab(
    number: str, cases: list[Case] | None = None, max_requests: int = MAX_REQUESTS
) -> None:
    lab = load_lab(number, repo_root())
    ready_or_skip(lab)
    target = TARGETS[number]
    cases = cases or fuzz.cases_for(target.surface)
    with serving(lab, "broken", log=print) as (setup, up):
        child, log, port = target_process(setup, up, target)
        time.sleep(1)  # settle after start-up before taking the idle figure
        idle = (tree_rss(child.pid) or 0) / MB
        recorder = Recorder()
        sampler = Sampler("fuzz-rss", 0.1, rss_poll(recorder, "rss", lambda: child.pid))
        sampler.start()

        def alive() -> None:
            if child.poll() is not None:
                raise AssertionError(f"lab {number} exited ({child.returncode}):\n{tail(log)}")

        try:
            report = Fuzzer(port, cases, max_requests, FUZZ_S).run(every_round=alive)
            time.sleep(0.5)  # what the last cases cost shows in the next samples
        finally:
            sampler.stop()
        still_ready(setup, target, child, log, port)
        peak = recorder.peak.get("rss", 0.0) / MB
        bound = idle + target.margin_mb
        print(
            f"\nfuzz lab {number}: {report.summary()}\n"
            f"fuzz lab {number}: RSS idle {idle:.1f} MB, peak {peak:.1f} MB, "
            f"bound {bound:.0f} MB (idle + {target.margin_mb:g}: {target.why})"
        )
        assert report.requests >= min(50, max_requests), report.summary()
        assert peak <= bound, f"lab {number}: peak RSS {peak:.1f} MB over {bound:.0f} MB"


@pytest.mark.parametrize("number", sorted(TARGETS))
def test_service_survives_the_fuzz_with_bounded_rss(number: str) -> None:
    fuzz_lab(number)


def test_lab_02_broker_does_not_allocate_announced_frames() -> None:
    """Issue 23's frame cap: 8 connections each announce a 64 MiB frame and send
    nothing. A broker that allocates what a peer announces peaks near 514 MB; one that
    reads as the bytes arrive stays within the lab's margin."""
    fuzz_lab("02", fuzz.announced_frames(count=8), max_requests=8)


# The fuzz itself, against a tiny loopback server: its bounds hold, its frames are right.


class Answering(socketserver.BaseRequestHandler):
    """Reads a little, answers 400 and hangs up, or says nothing when `silent`."""

    silent = False
    closed = 0

    def handle(self) -> None:
        self.request.settimeout(5)
        try:
            while self.request.recv(65536):
                if not self.silent:
                    self.request.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
                    return
        except OSError:
            pass
        type(self).closed += 1  # the client closed its end


@pytest.fixture
def server() -> Iterator[socketserver.ThreadingTCPServer]:
    Answering.silent, Answering.closed = False, 0
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Answering) as srv:
        srv.daemon_threads = True
        thread = threading.Thread(target=srv.serve_forever, daemon=True)
        thread.start()
        yield srv
        srv.shutdown()


def test_the_fuzz_stops_at_its_request_count(server: socketserver.ThreadingTCPServer) -> None:
    cases = fuzz.cases_for(Surface(body_path="/x", ws_path="/ws", framed=True))
    report = Fuzzer(server.server_address[1], cases, max_requests=40, linger_s=0).run()
    assert report.requests == 40
    assert report.answers["HTTP 400"] >= 30, report.summary()


def test_the_fuzz_stops_at_its_time_budget(server: socketserver.ThreadingTCPServer) -> None:
    Answering.silent = True  # every case waits for its read timeout
    cases = [Case("silent", b"GET / HTTP/1.1\r\n\r\n")]
    start = time.monotonic()
    report = Fuzzer(server.server_address[1], cases, 10_000, budget_s=1.0, linger_s=0).run()
    assert time.monotonic() - start < 2.0
    assert 0 < report.requests < 10 and report.silent == report.requests


def test_held_connections_are_closed_when_the_fuzz_ends(
    server: socketserver.ThreadingTCPServer,
) -> None:
    Answering.silent = True
    cases = [Case("abandoned", b"GET /heal", hold=True)]
    report = Fuzzer(server.server_address[1], cases, 5, linger_s=0.2).run()
    assert report.held == 5
    deadline = time.monotonic() + 5
    while Answering.closed < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert Answering.closed == 5


@pytest.mark.parametrize(
    ("size", "header"),
    [
        (125, b"\x81\xfd"),
        (126, b"\x81\xfe\x00\x7e"),
        (1 << 16, b"\x81\xff" + struct.pack(">Q", 1 << 16)),
    ],
)
def test_websocket_frames_announce_their_length(size: int, header: bytes) -> None:
    frame = fuzz.ws_frame(b"a" * size)
    assert frame.startswith(header) and len(frame) == len(header) + 4 + size
    assert fuzz.ws_frame(b"xx", length=1 << 62)[1:10] == b"\xff" + struct.pack(">Q", 1 << 62)
