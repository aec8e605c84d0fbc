"""Fake load: POSTs 100 KB bodies at a fixed rate, prints the progress protocol."""

import json
import os
import signal
import sys
import time
import urllib.request

stopping = False


def stop(_signum: int, _frame: object) -> None:
    """SIGTERM (an adaptive run has its verdict): finish like at the end of the duration."""
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, stop)

url, rate, duration = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
if rate <= 0:
    print("rate must be positive", file=sys.stderr)
    sys.exit(2)
sent = ok = 0
start = time.monotonic()
next_report = 1.0
while (elapsed := time.monotonic() - start) < duration and not stopping:
    req = urllib.request.Request(url + "/ingest", data=b"x" * 100_000, method="POST")
    with urllib.request.urlopen(req, timeout=2):
        ok += 1
    sent += 1
    if elapsed >= next_report:
        print(json.dumps({"t_s": elapsed, "sent": sent, "ok": ok, "errors": 0}), flush=True)
        next_report += 1
    time.sleep(max(0.0, sent / rate - (time.monotonic() - start)))
print(
    json.dumps({"done": True, "t_s": time.monotonic() - start, "sent": sent, "ok": ok, "errors": 0})
)
# Like lab 03's load, which exits 1 when interrupted (after its final line).
sys.exit(1 if stopping and os.environ.get("FAKE_LOAD_EXIT_1_WHEN_STOPPED") else 0)
