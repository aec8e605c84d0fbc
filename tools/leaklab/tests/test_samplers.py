"""TreeRss: the RSS of a process tree, cheap per sample, right when the tree changes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time

import psutil

from leaklab.samplers import Recorder, TreeRss, cpu_poll, http_json_poll, tree_rss

# A parent that starts a child holding ~60 MB, then waits for a line on stdin.
PARENT = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c",
    "import sys, time; b = bytearray(60_000_000); b[::4096] = b'x' * len(b[::4096]);"
    "print('ready', flush=True); time.sleep(600)"], stdout=subprocess.PIPE)
child.stdout.readline()
print(child.pid, flush=True)
sys.stdin.readline()
child.kill()
child.wait()
print("child gone", flush=True)
sys.stdin.readline()
"""


def test_tree_rss_follows_children_and_ends_with_the_root() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert parent.stdin is not None and parent.stdout is not None
    try:
        child_pid = int(parent.stdout.readline())
        rss = TreeRss(refresh_s=0.2)
        with_child = rss(parent.pid)
        child_rss = psutil.Process(child_pid).memory_info().rss
        assert with_child is not None and with_child >= child_rss > 50_000_000
        assert abs(with_child - (tree_rss(parent.pid) or 0)) < 10_000_000

        parent.stdin.write("\n")
        parent.stdin.flush()
        assert parent.stdout.readline().strip() == "child gone"
        rss(parent.pid)  # notices the child has gone, looks the tree up again next time
        time.sleep(0.3)
        alone = rss(parent.pid)
        assert alone is not None and alone < with_child - 40_000_000
    finally:
        parent.kill()
        parent.wait()
    assert rss(parent.pid) is None


def test_http_json_poll_survives_a_server_that_closes_every_connection() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve(count: int) -> None:
        for i in range(count):
            conn, _ = server.accept()
            conn.recv(4096)
            body = json.dumps({"heap": {"bytes": i}}).encode()
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            conn.sendall(head + body)
            conn.close()  # no Connection: close header, as a minimal server might do

    thread = threading.Thread(target=serve, args=(5,), daemon=True)
    thread.start()
    recorder = Recorder()
    poll = http_json_poll(recorder, f"http://127.0.0.1:{port}/metrics", {"heap": "heap.bytes"})
    for _ in range(5):
        poll()
    thread.join(timeout=5)
    server.close()
    assert [value for _, _, value in recorder.snapshot()] == [0, 1, 2, 3, 4]
    assert recorder.errors == {}


# Burns 0.3 s of its own CPU (however long that takes on a busy machine), then waits.
BURN = (
    "import time\n"
    "while time.process_time() < 0.3: pass\n"
    "print('burnt', flush=True)\n"
    "time.sleep(60)\n"
)


def test_cpu_poll_reads_the_cpu_time_a_process_used() -> None:
    """The cost check of a grade reads this series: it must count the service's own
    CPU seconds, measured from outside, not wall time or the sampler's."""
    recorder = Recorder()
    child = subprocess.Popen([sys.executable, "-c", BURN], stdout=subprocess.PIPE, text=True)
    try:
        poll = cpu_poll(recorder, "cpu_seconds", lambda: child.pid)
        poll()
        assert child.stdout is not None and child.stdout.readline() == "burnt\n"
        poll()
    finally:
        child.kill()
        child.wait()
    values = [value for _, name, value in recorder.snapshot() if name == "cpu_seconds"]
    assert len(values) == 2 and values[0] <= values[1]
    assert 0.28 <= values[1] < 3.0, values  # in clock ticks (10 ms), rounded down
