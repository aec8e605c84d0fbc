"""Fake self-driving client: sends 10 KB messages to the broker for --duration seconds,
prints the progress protocol on stdout and its held bytes to $LEAKLAB_SERIES_FILE."""

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

HELD: list[bytes] = []


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--duration", type=float, required=True)
    parser.add_argument("--mode", default="normal")
    args = parser.parse_args()
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        return run(args)
    finally:
        helper.kill()


def run(args: argparse.Namespace) -> int:
    series = Path(os.environ["LEAKLAB_SERIES_FILE"]).open("w")  # noqa: SIM115
    start = time.monotonic()
    sent = acked = 0
    next_report = 0.2
    with socket.create_connection(("127.0.0.1", args.port)) as sock, sock.makefile("rwb") as f:
        while (elapsed := time.monotonic() - start) < args.duration:
            if args.mode == "hang":
                time.sleep(0.05)
                continue
            message = b"x" * 10_000
            f.write(b"m\n")
            f.flush()
            sent += 1
            if f.readline() == b"ok\n":
                acked += 1
            HELD.append(message)
            series.write(json.dumps({"t_s": elapsed, "held": sum(map(len, HELD))}) + "\n")
            series.flush()
            if elapsed >= next_report:
                print(json.dumps({"t_s": elapsed, "sent": sent, "acked": acked, "errors": 0}))
                sys.stdout.flush()
                next_report += 0.2
            if args.mode == "fail" and elapsed > 0.5:
                print("client: delivery failed", file=sys.stderr)
                return 1
            time.sleep(0.02)
    load_end = time.monotonic() - start
    time.sleep(0.5)  # a drain phase after the load: not part of the steady window
    if args.mode == "no-done":
        return 0
    done = {"done": True, "t_s": time.monotonic() - start, "sent": sent, "acked": acked}
    print(json.dumps({**done, "errors": 0, "load_end_s": load_end}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
