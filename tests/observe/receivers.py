"""Real HTTP receivers on 127.0.0.1 for the observers' tests: a webhook (Apprise's
``json://`` posts, Slack-shaped posts) and an OpenLineage endpoint. Each records what it
was sent; it can answer 500 or answer too late."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Receiver:
    port: int
    status: int = 200
    delay: float = 0.0
    posts: list[dict[str, Any]] = field(default_factory=list)

    def url(self, scheme: str, path: str = "hook") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/{path}"

    @property
    def bodies(self) -> list[Any]:
        return [p["json"] for p in self.posts]


@contextmanager
def receiver(status: int = 200, delay: float = 0.0) -> Iterator[Receiver]:
    """A webhook that records each POST (path, headers, JSON body) and answers ``status``
    after ``delay`` seconds."""
    state = Receiver(port=0, status=status, delay=delay)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            state.posts.append(
                {"path": self.path, "headers": dict(self.headers), "raw": raw, "json": body}
            )
            if state.delay:
                time.sleep(state.delay)
            try:
                self.send_response(state.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")
            except OSError:
                pass  # the client gave up waiting

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (a receiver that is down)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
