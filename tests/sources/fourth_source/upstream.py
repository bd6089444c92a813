"""A tiny stateful fake of the ``notes`` upstream, on a loopback HTTP server.

Real sockets and a real port, so the source only reaches it through the base URL its
endpoint's environment variable names. Boards map to their notes; every request is kept
(path and headers) for the test to inspect.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class NotesUpstream:
    boards: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    @contextmanager
    def serving(self) -> Iterator[str]:
        """Serve on 127.0.0.1 (a free port) until the block ends; yields the base URL."""
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                upstream.requests.append((self.path, dict(self.headers.items())))
                parts = self.path.strip("/").split("/")
                if len(parts) == 3 and parts[0] == "boards" and parts[2] == "notes":
                    notes = upstream.boards.get(parts[1])
                    if notes is not None:
                        self._send(200, json.dumps(notes).encode())
                        return
                self._send(404, b'{"error":"not found"}')

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_port}"
        finally:
            server.shutdown()
            server.server_close()
            thread.join()
