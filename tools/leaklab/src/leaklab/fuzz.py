"""A bounded fuzz of a running service: what a hostile or broken client sends.

Malformed HTTP (bad request lines and methods, oversized URIs and headers, truncated,
oversized and invalid bodies: bad JSON, bad UTF-8), abandoned connections that send
half a request and stop, slowloris connections that trickle header lines, and, where
the service speaks them, malformed and oversized WebSocket frames or frames of its own
length-prefixed TCP protocol.

The fuzz only checks that it can run; whether the service survived it (still ready,
memory bounded) is for the caller to measure. It is bounded three ways: it talks only
to 127.0.0.1, stops after `max_requests` connections or `budget_s` seconds, whichever
comes first, and every socket has a timeout, so a service that stops reading cannot
hang it. Cases are fixed byte strings (plus a seeded random one), so a failure is
reproducible from its case name.
"""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from leaklab.procs import LOOPBACK

KB = 1024
MB = 1024 * KB


@dataclass(frozen=True)
class Surface:
    """What a service speaks, for the fuzz: HTTP (with a path that takes a body), a
    WebSocket endpoint, or a length-prefixed frame protocol (`[len u32 BE][kind][body]`)."""

    http: bool = True
    body_path: str = "/"
    ws_path: str | None = None
    framed: bool = False


@dataclass(frozen=True)
class Case:
    """One malformed exchange on its own connection.

    `send` goes first; `then` is sent once the first answer has arrived (a frame after a
    WebSocket handshake). A `hold` case is an abandoned connection: it sends its bytes and
    then nothing more, kept open until the end of the fuzz, and `trickle` (slowloris) is
    sent on it again at every later case, one more header line a round."""

    name: str
    send: bytes
    then: bytes = b""
    hold: bool = False
    trickle: bytes = b""


@dataclass
class Report:
    """What the fuzz did: connections made, how the service answered them."""

    # How each connection ended (one case each): an answer, a close (or reset) without
    # one, silence within the read timeout, or held open on purpose; or never opened.
    requests: int = 0
    answered: int = 0
    closed: int = 0
    silent: int = 0
    held: int = 0
    refused: int = 0
    # Every answer by its first line (`HTTP 400`); a WebSocket case answers twice (its
    # handshake's 101, then whatever its frame got).
    answers: Counter[str] = field(default_factory=Counter)
    elapsed_s: float = 0.0

    def summary(self) -> str:
        top = ", ".join(f"{label} x{n}" for label, n in self.answers.most_common(6))
        return (
            f"{self.requests} requests in {self.elapsed_s:.1f} s: {self.answered} answered, "
            f"{self.closed} closed without an answer, {self.silent} silent, "
            f"{self.held} held open, {self.refused} refused; answers: {top or 'none'}"
        )


class Fuzzer:
    """Runs the cases round-robin against one loopback port, within the bounds."""

    def __init__(
        self,
        port: int,
        cases: list[Case],
        max_requests: int = 2000,
        budget_s: float = 10.0,
        max_held: int = 48,
        linger_s: float = 1.0,
    ) -> None:
        self.port = port
        self.cases = cases
        self.max_requests = max_requests
        self.budget_s = budget_s
        self.max_held = max_held
        self.linger_s = linger_s  # held connections stay open this long after the last case
        self.read_timeout_s = 0.3
        self.report = Report()
        self._held: list[tuple[socket.socket, bytes]] = []

    def run(self, every_round: Callable[[], None] = lambda: None) -> Report:
        """Every case in turn until a bound is reached; `every_round` runs after each
        (the caller's liveness check). Held connections are closed `linger_s` after the
        last case, so what they cost the service can be measured while they are open."""
        start = time.monotonic()
        deadline = start + self.budget_s
        try:
            for i in range(self.max_requests):
                if time.monotonic() >= deadline:
                    break
                self._one(self.cases[i % len(self.cases)])
                self._trickle()
                every_round()
            linger_end = time.monotonic() + self.linger_s
            while self._held and time.monotonic() < linger_end:
                time.sleep(0.1)
                self._trickle()
                every_round()
        finally:
            for sock, _ in self._held:
                sock.close()
            self._held.clear()
            self.report.elapsed_s = time.monotonic() - start
        return self.report

    def _one(self, case: Case) -> None:
        try:
            sock = socket.create_connection((LOOPBACK, self.port), timeout=1.0)
        except OSError:
            self.report.refused += 1
            return
        self.report.requests += 1
        try:
            sock.sendall(case.send)
            if case.then:
                if handshake := _read(sock, self.read_timeout_s, until=b"\r\n\r\n"):
                    self.report.answers[_label(handshake)] += 1
                sock.sendall(case.then)
        except OSError:
            pass  # reset mid-send (an oversized request refused early): read what came
        if case.hold:
            self._keep(sock, case.trickle)
            return
        with sock:
            self._record(_read(sock, self.read_timeout_s))

    def _record(self, answer: bytes | None) -> None:
        if answer is None:
            self.report.silent += 1
        elif not answer:
            self.report.closed += 1
        else:
            self.report.answered += 1
            self.report.answers[_label(answer)] += 1

    def _keep(self, sock: socket.socket, trickle: bytes) -> None:
        if len(self._held) >= self.max_held:
            oldest, _ = self._held.pop(0)
            oldest.close()
        else:
            self.report.held += 1
        self._held.append((sock, trickle))

    def _trickle(self) -> None:
        """Slowloris: one more header line on each trickling connection, never the end."""
        for sock, trickle in self._held:
            if trickle:
                with contextlib.suppress(OSError):
                    sock.settimeout(0.02)
                    sock.send(trickle)


def _read(sock: socket.socket, timeout_s: float, until: bytes = b"") -> bytes | None:
    """What the peer sends (at most 64 KB, or up to `until`): b"" if it closed (or reset)
    at once, None if it said nothing within `timeout_s` and kept the connection open.
    Once an answer has started, a pause of 20 ms ends it: a kept-alive connection does
    not close after its answer, and waiting for that would cost a timeout per case."""
    sock.settimeout(timeout_s)
    data = b""
    try:
        while len(data) < 64 * KB:
            chunk = sock.recv(16 * KB)
            if not chunk or (until and until in data + chunk):
                return data + chunk
            data += chunk
            sock.settimeout(0.02)
    except TimeoutError:
        return data or None
    except OSError:
        return data
    return data


def _label(answer: bytes) -> str:
    """`HTTP/1.1 400 Bad Request` -> `HTTP 400`; a length-prefixed frame -> its kind
    byte; a WebSocket frame -> its opcode (0x8 is a close)."""
    if answer.startswith(b"HTTP/"):
        parts = answer.split(b"\r\n", 1)[0].split()
        return f"HTTP {parts[1].decode(errors='replace')}" if len(parts) > 1 else "HTTP ?"
    if len(answer) >= 5 and struct.unpack(">I", answer[:4])[0] <= len(answer) - 4:
        return f"frame kind {answer[4]:#04x}"
    if answer[0] & 0x70 == 0 and answer[0] & 0x0F in (0x0, 0x1, 0x2, 0x8, 0x9, 0xA):
        return f"ws opcode {answer[0] & 0x0F:#x}"
    return f"{len(answer)} bytes"


def cases_for(surface: Surface) -> list[Case]:
    """Every case for a service that speaks `surface`, oversized ones spaced out."""
    cases: list[Case] = []
    if surface.http:
        cases += http_cases(surface.body_path)
    if surface.ws_path:
        cases += websocket_cases(surface.ws_path)
    if surface.framed:
        cases += frame_cases()
    return cases


def _request(method: str, path: str, headers: str = "", body: bytes = b"") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: {LOOPBACK}\r\n{headers}"
    if body and "Content-Length" not in headers and "Transfer-Encoding" not in headers:
        head += f"Content-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


def _post(path: str, body: bytes) -> bytes:
    return _request("POST", path, "Content-Type: application/json\r\n", body)


def http_cases(body_path: str) -> list[Case]:
    return [
        *_request_line_cases(),
        *_header_cases(),
        *_body_cases(body_path),
        *_abandoned_cases(body_path),
    ]


def _request_line_cases() -> list[Case]:
    noise = random.Random(23).randbytes(2 * KB)
    return [
        Case("empty lines", b"\r\n\r\n\r\n"),
        Case("no target", b"GET\r\n\r\n"),
        Case("no version", b"GET /healthz\r\n\r\n"),
        Case("unknown version", b"GET /healthz HTTP/7.3\r\nHost: x\r\n\r\n"),
        Case("extra words", b"GET /healthz HTTP/1.1 please\r\nHost: x\r\n\r\n"),
        Case("bare LF", b"GET /healthz HTTP/1.1\nHost: x\n\n"),
        Case("unknown method", _request("BREW", "/healthz")),
        Case("DELETE healthz", _request("DELETE", "/healthz")),
        Case("POST healthz", _post("/healthz", b"{}")),
        Case("lower-case method", _request("get", "/healthz")),
        Case("NUL in method", b"G\x00T /healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
        Case("absolute URI", _request("GET", "http://example.invalid/healthz")),
        Case("asterisk", _request("OPTIONS", "*")),
        Case("bad escapes", _request("GET", "/%ff%fe%00/..%2f..%2fetc/passwd?%zz")),
        Case("invalid UTF-8 path", b"GET /\xff\xfe\xc3\x28 HTTP/1.1\r\nHost: x\r\n\r\n"),
        Case("URI of 8 KB", _request("GET", "/?q=" + "a" * 8 * KB)),
        Case("URI of 64 KB", _request("GET", "/" + "a" * 64 * KB)),
        Case("TLS hello", bytes.fromhex("160301020001000200030300") + noise[:500]),
        Case("HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + noise[:64]),
        Case("random bytes", noise),
    ]


def _header_cases() -> list[Case]:
    many = "".join(f"X-H{i}: {i}\r\n" for i in range(2000))
    return [
        Case("header of 8 KB", _request("GET", "/healthz", f"X-Fill: {'b' * 8 * KB}\r\n")),
        Case("header of 64 KB", _request("GET", "/healthz", f"X-Fill: {'b' * 64 * KB}\r\n")),
        Case("2000 headers", _request("GET", "/healthz", many)),
        Case("no colon", _request("GET", "/healthz", "NoColonHere\r\n")),
        Case("NUL in header", b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n"),
        Case("folded header", _request("GET", "/healthz", "X-A: a\r\n  folded\r\n")),
        Case("space before colon", _request("GET", "/healthz", "Host : x\r\n")),
        Case("no Host", b"GET /healthz HTTP/1.1\r\n\r\n"),
        Case("two Hosts", _request("GET", "/healthz", "Host: other\r\n")),
        Case("invalid UTF-8 header", b"GET /healthz HTTP/1.1\r\nHost: \xff\xfe\r\n\r\n"),
        Case("expect continue", _request("POST", "/healthz", "Expect: 100-continue\r\n")),
        Case("upgrade h2c", _request("GET", "/healthz", "Connection: Upgrade\r\nUpgrade: h2c\r\n")),
    ]


def _body_cases(path: str) -> list[Case]:
    nested = b"[" * 5000 + b"]" * 5000
    return [
        Case("truncated JSON", _post(path, b'{"a": [1, 2')),
        Case("not JSON", _post(path, b"hello, world")),
        Case("JSON null", _post(path, b"null")),
        Case("JSON array", _post(path, b"[1, 2, 3]")),
        Case("wrong types", _post(path, b'{"agent_id": 7, "lat": "x", "lon": [], "ts": {}}')),
        Case("invalid UTF-8 JSON", _post(path, b'{"agent_id": "\xff\xfe", "skater": "\xc3\x28"}')),
        Case("huge number", _post(path, b'{"lat": 1e999999, "lon": -1e999999}')),
        Case("nested 5000 deep", _post(path, nested)),
        Case("long string", _post(path, b'{"agent_id": "' + b"x" * 256 * KB + b'"}')),
        Case("body of 4 MB", _post(path, b'{"pad": "' + b"p" * 4 * MB + b'"}')),
        Case("GET with a body", _request("GET", path, "Content-Length: 5\r\n", b"hello")),
        Case("PUT", _request("PUT", path, "Content-Length: 2\r\n", b"{}")),
        Case("bad length", _request("POST", path, "Content-Length: abc\r\n")),
        Case("negative length", _request("POST", path, "Content-Length: -5\r\n", b"hello")),
        Case(
            "two lengths",
            _request("POST", path, "Content-Length: 2\r\nContent-Length: 9\r\n", b"{}"),
        ),
        Case(
            "chunked bad size",
            _request("POST", path, "Transfer-Encoding: chunked\r\n", b"zz\r\n{}\r\n0\r\n\r\n"),
        ),
        Case(
            "chunked huge size",
            _request("POST", path, "Transfer-Encoding: chunked\r\n", b"fffffffffffffff\r\n{}\r\n"),
        ),
        Case(
            "chunked and length",
            _request(
                "POST", path, "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", b"0\r\n\r\n"
            ),
        ),
        Case("pipelined junk", _request("GET", "/healthz") + b"\x00\x01junk\r\n\r\n"),
    ]


def _abandoned_cases(path: str) -> list[Case]:
    return [
        Case("half a request line", b"GET /heal", hold=True),
        Case("headers never end", b"GET /healthz HTTP/1.1\r\nHost: x\r\n", hold=True),
        Case(
            "body never comes",
            _request("POST", path, "Content-Length: 1000\r\n", b'{"a'),
            hold=True,
        ),
        Case(
            "announces 10 GB",
            _request("POST", path, "Content-Length: 10000000000\r\n", b"{"),
            hold=True,
        ),
        Case(
            "chunked never ends",
            _request("POST", path, "Transfer-Encoding: chunked\r\n", b"5\r\nhel"),
            hold=True,
        ),
        Case(
            "slowloris",
            b"GET /healthz HTTP/1.1\r\nHost: x\r\n",
            hold=True,
            trickle=b"X-Slow: 1\r\n",
        ),
    ]


# The key of RFC 6455's own example: any 16 bytes, base64-encoded.
WS_KEY = "dGhlIHNhbXBsZSBub25jZQ=="


def ws_handshake(
    path: str, key: str | None = WS_KEY, version: str = "13", upgrade: str = "websocket"
) -> bytes:
    headers = f"Upgrade: {upgrade}\r\nConnection: Upgrade\r\n"
    if key is not None:
        headers += f"Sec-WebSocket-Key: {key}\r\n"
    return _request("GET", path, headers + f"Sec-WebSocket-Version: {version}\r\n")


def ws_frame(
    payload: bytes,
    opcode: int = 0x1,
    fin: bool = True,
    masked: bool = True,
    rsv: int = 0,
    length: int | None = None,
) -> bytes:
    """A WebSocket frame; `length` announces a size other than the payload's."""
    size = len(payload) if length is None else length
    head = bytes([(0x80 if fin else 0) | (rsv << 4) | opcode])
    mask_bit = 0x80 if masked else 0
    if size < 126:
        head += bytes([mask_bit | size])
    elif size < 1 << 16:
        head += bytes([mask_bit | 126]) + struct.pack(">H", size)
    else:
        head += bytes([mask_bit | 127]) + struct.pack(">Q", size)
    if not masked:
        return head + payload
    mask = b"\x1f\x2e\x3d\x4c"
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def websocket_cases(path: str) -> list[Case]:
    hello = ws_handshake(path)

    def after(name: str, frames: bytes, hold: bool = False) -> Case:
        return Case(f"ws {name}", hello, then=frames, hold=hold)

    return [
        Case("ws no key", ws_handshake(path, key=None)),
        Case("ws key not base64", ws_handshake(path, key="not base64 !!")),
        Case("ws version 99", ws_handshake(path, version="99")),
        Case("ws upgrade to h2c", ws_handshake(path, upgrade="h2c")),
        after("unmasked frame", ws_frame(b'{"type":"join"}', masked=False)),
        after("reserved bits", ws_frame(b"{}", rsv=0b111)),
        after("reserved opcode", ws_frame(b"{}", opcode=0x3)),
        after("ping of 200 bytes", ws_frame(b"p" * 200, opcode=0x9)),
        after("fragmented ping", ws_frame(b"p", opcode=0x9, fin=False)),
        after("continuation first", ws_frame(b"{}", opcode=0x0)),
        after("invalid UTF-8 text", ws_frame(b'{"type": "join", "topic": "\xff\xfe"}')),
        after("truncated JSON", ws_frame(b'{"type": "jo')),
        after("unknown type", ws_frame(b'{"type": "explode", "ref": "1"}')),
        after(
            "topic of 64 KB",
            ws_frame(b'{"type": "join", "ref": "1", "topic": "' + b"t" * 64 * KB + b'"}'),
        ),
        after("text of 1 MB", ws_frame(b'{"pad": "' + b"p" * MB + b'"}')),
        after("close code 999", ws_frame(struct.pack(">H", 999) + b"\xff", opcode=0x8)),
        after("100 pings", ws_frame(b"", opcode=0x9) * 100),
        after("announces 2^62 bytes", ws_frame(b"xx", length=1 << 62), hold=True),
        after("announces 16 MB, sends 64 KB", ws_frame(b"y" * 64 * KB, length=16 * MB), hold=True),
        after("half a frame header", ws_frame(b"hello")[:3], hold=True),
    ]


def frame(kind: int, body: bytes, length: int | None = None) -> bytes:
    """`[len u32 BE][kind][body]`; `length` announces a size other than the real one."""
    size = len(body) + 1 if length is None else length
    return struct.pack(">I", size) + bytes([kind]) + body


PRODUCE, PRODUCE_BATCH = 1, 2


def frame_cases() -> list[Case]:
    lying_batch = frame(PRODUCE_BATCH, struct.pack(">I", 0xFFFFFFFF))
    long_message = frame(PRODUCE_BATCH, struct.pack(">II", 1, 1 << 30) + b"m")
    return [
        Case("frame produce", frame(PRODUCE, b"hello")),
        Case("frame length 0", struct.pack(">I", 0)),
        Case("frame length 2^32-1", struct.pack(">I", 0xFFFFFFFF) + b"\x01"),
        Case("frame over 64 MiB", struct.pack(">I", 64 * MB + 1) + b"\x01"),
        Case("frame unknown kind", frame(0x7F, b"?")),
        Case("frame lying batch count", lying_batch),
        Case("frame batch message too long", long_message),
        Case("frame batch trailing bytes", frame(PRODUCE_BATCH, struct.pack(">II", 1, 1) + b"ab")),
        Case("frame kind only", frame(PRODUCE_BATCH, b"")),
        Case("frame half a prefix", b"\x00\x00"),
        Case("frame truncated body", frame(PRODUCE, b"hello", length=100)[:8]),
        Case("frame of 1 MB", frame(PRODUCE, b"m" * MB)),
        Case("frame 100 produces", frame(PRODUCE, b"x") * 100),
        Case("frame then junk", frame(PRODUCE, b"ok") + b"\xde\xad\xbe\xef" * 4),
        Case("HTTP to a frame port", _request("GET", "/healthz")),
        Case("frame announces 1 MB, stops", frame(PRODUCE, b"z" * KB, length=MB), hold=True),
    ]


def announced_frames(count: int = 8, size: int = 64 * MB) -> list[Case]:
    """Issue 23's frame-cap case: connections that each announce the largest frame the
    protocol allows and send nothing more. A reader that allocates what the peer
    announces holds `count x size` bytes (8 x 64 MiB took the broker to 514 MB)."""
    return [
        Case(f"announce {size // MB} MiB #{i}", struct.pack(">I", size) + b"\x01", hold=True)
        for i in range(count)
    ]
