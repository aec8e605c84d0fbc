"""Fake broker: answers every line with `ok` after 1 ms; modes to fail in each way."""

import socket
import subprocess
import sys
import threading
import time

port, mode = int(sys.argv[1]), sys.argv[2]
if mode == "crash":
    print("broker: crashing at start", flush=True)
    sys.exit(3)
# A grandchild, so the tests can prove the whole process group is stopped.
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
if mode == "never-ready":
    time.sleep(600)


def serve(conn: socket.socket) -> None:
    with conn, conn.makefile("rwb") as f:
        for _line in f:
            time.sleep(0.001)
            f.write(b"ok\n")
            f.flush()


def die_later() -> None:
    time.sleep(1.0)
    print("broker: crashing mid-run", flush=True)
    helper.kill()
    import os

    os._exit(4)


if mode == "die-later":
    threading.Thread(target=die_later, daemon=True).start()
with socket.create_server(("127.0.0.1", port)) as server:
    while True:
        conn, _ = server.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()
