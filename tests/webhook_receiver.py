"""A webhook receiver on loopback for the event sink tests: it records every request,
checks its signature as a tenant's receiver would (its own HMAC, not Kiln's code), drops
repeats by the event id header, and answers as a test scripts it per path: a list of
statuses to give first (then 200), a redirect, a stall until released, or an answer
trickled a byte at a time that never ends."""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import hmac
import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any


@dataclasses.dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def event_id(self) -> str:
        return self.headers["x-kiln-event-id"]

    @property
    def event(self) -> dict[str, Any]:
        return dict(json.loads(self.body))

    def signed_with(self, secret: str) -> bool:
        timestamp = self.headers["x-kiln-timestamp"]
        expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + self.body,
                            hashlib.sha256).hexdigest()
        return hmac.compare_digest(self.headers["x-kiln-signature"], f"sha256={expected}")


class Receiver:
    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.lock = threading.Lock()
        self.scripts: dict[str, collections.deque[int]] = {}
        self.redirects: dict[str, str] = {}
        self.stalls: dict[str, threading.Event] = {}
        self.stalled = threading.Event()  # set when a stalled request has arrived
        self.trickles: set[str] = set()  # paths whose answer trickles and never ends
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 -- http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                got = Received(self.path, {k.lower(): v for k, v in self.headers.items()},
                               body)
                with receiver.lock:
                    receiver.requests.append(got)
                    script = receiver.scripts.get(self.path)
                    status = script.popleft() if script else 200
                    stall = receiver.stalls.pop(self.path, None)
                if stall is not None:
                    receiver.stalled.set()
                    stall.wait(30)
                if self.path in receiver.trickles:
                    self._trickle()
                    return
                location = receiver.redirects.get(self.path)
                if location:
                    self.send_response(307)
                    self.send_header("Location", location)
                else:
                    self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _trickle(self) -> None:
                # An answer that never ends: a header line a byte at a time, each well
                # within any socket timeout, until Kiln hangs up (or 10 s).
                self.close_connection = True
                try:
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                    for _ in range(200):
                        self.wfile.write(b"a")
                        self.wfile.flush()
                        time.sleep(0.05)
                except OSError:
                    pass

            def log_message(self, *_: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # A short poll: shutdown() waits for the loop to look again.
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,),
                                       daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def fail_first(self, path: str, *statuses: int) -> None:
        with self.lock:
            self.scripts[path] = collections.deque(statuses)

    def stall_first(self, path: str) -> threading.Event:
        """The next request on ``path`` waits (after being recorded, as a receiver that
        took the event but had not answered yet) until the event returned is set."""
        release = threading.Event()
        with self.lock:
            self.stalls[path] = release
        return release

    def on(self, path: str) -> list[Received]:
        with self.lock:
            return [got for got in self.requests if got.path == path]

    def deduped(self, path: str) -> dict[str, Received]:
        """The first request of each event id: what a receiver that drops repeats keeps."""
        kept: dict[str, Received] = {}
        for got in self.on(path):
            kept.setdefault(got.event_id, got)
        return kept

    def wait_for(self, done: Callable[[], bool], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                raise AssertionError(f"not received in {timeout} s: {self.requests}")
            time.sleep(0.05)


def running() -> Iterator[Receiver]:
    """A receiver serving until the generator is closed (for a fixture)."""
    receiver = Receiver()
    receiver.thread.start()
    try:
        yield receiver
    finally:
        for stall in list(receiver.stalls.values()):
            stall.set()
        receiver.server.shutdown()
        receiver.server.server_close()
