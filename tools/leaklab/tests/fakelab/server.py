"""Fake service: keeps every request body it sees (the bug the patch removes)."""

import json
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HELD: list[bytes] = []


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/healthz":
            body = b"ok"
        elif self.path == "/stats":
            body = json.dumps({"held": {"bytes": sum(map(len, HELD))}}).encode()
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        HELD.append(body)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


if __name__ == "__main__":
    port, mode = int(sys.argv[1]), sys.argv[2]
    if mode == "crash":
        sys.exit(3)
    if mode == "never-ready":
        Handler.do_GET = lambda self: self.send_error(503)  # type: ignore[method-assign]
    # A grandchild, so the tests can prove the whole process group is stopped.
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    try:
        server.serve_forever()
    finally:
        helper.kill()
