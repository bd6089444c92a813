"""Record / replay of HTTP exchanges, as httpx transports.

``--record DIR`` saves every exchange (method, URL, status, headers minus secrets, body) as
evidence of a fetch; ``--replay DIR`` serves a recorded session offline and refuses any
request that was not recorded. One JSON file per distinct request (method, URL with sorted
query, body digest) holds the responses in the order they were received; replay serves them
in that order and repeats the last one.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx

from warehouse.errors import NotRecorded

SECRET_HEADERS = frozenset(
    {"authorization", "api-key", "cookie", "set-cookie", "x-api-key", "proxy-authorization"}
)
_DROPPED_RESPONSE_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length"})


def normalised_url(url: str) -> str:
    parts = urlsplit(url)
    query = urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))
    return urlunsplit((parts.scheme, parts.netloc.lower(), parts.path, query, ""))


def exchange_key(method: str, url: str, body: bytes) -> str:
    digest = hashlib.sha256(body).hexdigest() if body else ""
    return f"{method.upper()} {normalised_url(url)} {digest}".rstrip()


def exchange_path(directory: Path, method: str, url: str, body: bytes) -> Path:
    key = exchange_key(method, url, body)
    host = urlsplit(url).netloc.lower().replace(":", "_") or "_"
    return directory / host / (hashlib.sha256(key.encode()).hexdigest()[:24] + ".json")


def _encode_body(content: bytes) -> dict[str, str]:
    try:
        return {"body_text": content.decode("utf-8")}
    except UnicodeDecodeError:
        return {"body_base64": base64.b64encode(content).decode("ascii")}


def _decode_body(entry: dict[str, Any]) -> bytes:
    if "body_text" in entry:
        return str(entry["body_text"]).encode("utf-8")
    return base64.b64decode(entry.get("body_base64", ""))


def _public_headers(headers: httpx.Headers, dropped: frozenset[str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items() if k.lower() not in dropped}


class RecordingTransport(httpx.BaseTransport):
    """Passes requests to ``inner`` and appends every exchange to ``directory``."""

    def __init__(self, inner: httpx.BaseTransport, directory: Path) -> None:
        self.inner = inner
        self.directory = directory
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        content = response.read()
        body = request.read()
        path = exchange_path(self.directory, request.method, str(request.url), body)
        response_headers = _public_headers(
            response.headers, SECRET_HEADERS | _DROPPED_RESPONSE_HEADERS
        )
        response_entry: dict[str, Any] = {
            "status": response.status_code,
            "headers": response_headers,
            **_encode_body(content),
        }
        with self._lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists():
                data = json.loads(path.read_text("utf-8"))
            else:
                data = {
                    "method": request.method,
                    "url": normalised_url(str(request.url)),
                    "request_headers": _public_headers(request.headers, SECRET_HEADERS),
                    "responses": [],
                }
                if body:
                    data["request_body"] = _encode_body(body)
            data["responses"].append(response_entry)
            path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", "utf-8")
        return httpx.Response(
            response.status_code,
            headers=response_headers,
            content=content,
            request=request,
        )

    def close(self) -> None:
        self.inner.close()


class ReplayTransport(httpx.BaseTransport):
    """Serves a recorded session; any request not recorded raises :class:`NotRecorded`."""

    def __init__(self, directory: Path) -> None:
        if not directory.is_dir():
            raise FileNotFoundError(f"no recorded session at {directory}")
        self.directory = directory
        self._served: dict[Path, int] = {}
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        path = exchange_path(self.directory, request.method, str(request.url), body)
        if not path.exists():
            raise NotRecorded(request.method, normalised_url(str(request.url)), self.directory)
        data = json.loads(path.read_text("utf-8"))
        responses = data["responses"]
        with self._lock:
            index = self._served.get(path, 0)
            self._served[path] = index + 1
        entry = responses[min(index, len(responses) - 1)]
        return httpx.Response(
            int(entry["status"]),
            headers=entry.get("headers", {}),
            content=_decode_body(entry),
            request=request,
        )
