"""The HTTP policy every source shares.

One client factory gives each source: timeouts, the User-Agent its caller names, a body-size
cap, a host allowlist (a redirect to another host is refused), polite pacing, retries only
for transient failures (connect/read errors, 429, 502/503/504, a compressed body that does
not decompress) honouring ``Retry-After``, and optional record/replay of every exchange.
Each source declares its own endpoints (:class:`Endpoint`): a default base URL, overridable
by environment and by manifest.

Errors are classified here, once: :class:`TransientHttpError` was retried until the budget
ran out; :class:`TerminalHttpError` was reported at once (404, 401, 409, a bad content type,
a body over the cap, a redirect off the allowlist, a request missing from a replay).
"""

from __future__ import annotations

import email.utils
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
import orjson
import tenacity

from sources.digits import is_ascii_digits
from sources.recording import RecordingTransport, ReplayTransport
from warehouse import canonical, settings
from warehouse.errors import (
    BodyTooLarge,
    CorruptBody,
    HostNotAllowed,
    HttpError,
    NotRecorded,
    RetryBudgetExhausted,
    TerminalHttpError,
    TransientHttpError,
)

ENV_RECORD = "RECEIPTS_RECORD"
ENV_REPLAY = "RECEIPTS_REPLAY"

log = logging.getLogger("receipts.http")

TRANSIENT_STATUSES = frozenset({429, 502, 503, 504})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class Endpoint:
    """One endpoint family of an upstream, as its source declares it: a name (used in
    messages), the default base URL, and the environment variable that overrides it."""

    name: str
    default_url: str
    env_var: str

    def base_url(self, manifest_value: str | None = None) -> str:
        """The base URL: environment, then manifest, then the default.

        The environment wins so that a mirror, a proxy or a test fake can stand in for every
        manifest at once.
        """
        value = settings.endpoint_url(self.env_var) or manifest_value or self.default_url
        return value.rstrip("/")

    @property
    def default_host(self) -> str:
        return host_of(self.default_url)


def host_of(url: str) -> str:
    return urlsplit(url).netloc.lower()


def checked_base_url(value: str | None) -> str | None:
    """``value`` itself when it can be a base URL (or is None); a manifest validator's
    ``ValueError`` naming what is wrong otherwise."""
    problem = None if value is None else base_url_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def base_url_problem(value: str) -> str | None:
    """Why ``value`` cannot be a base URL (an http(s) origin, optionally with a path), or
    None. User info is refused: in ``https://dev.to@evil.example/`` the host is
    evil.example, whatever the text seems to say."""
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value):
        return f"{value!r} contains whitespace or a control character"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError as exc:
        return f"{value!r} is not a URL: {exc}"
    if parts.scheme not in ("http", "https"):
        return f"{value!r} is not an http(s) URL"
    if not parts.hostname:
        return f"{value!r} names no host"
    if "@" in parts.netloc:
        return (
            f"{value!r} has user info before '@': its host is {parts.hostname!r}; "
            "write the host alone"
        )
    if parts.query or parts.fragment:
        return f"{value!r} has a query or fragment; give the base URL alone"
    return None


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header; None when absent, invalid or zero."""
    if not value:
        return None
    value = value.strip()
    if is_ascii_digits(value):
        seconds = float(value)
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - (now if now is not None else time.time())
    return seconds if seconds > 0 else None


# A hook that may reclassify a response: return an exception to raise, or None to continue.
Classifier = Callable[[httpx.Response], HttpError | None]


def corrupt_body(url: str, status: int, exc: httpx.DecodingError) -> CorruptBody:
    return CorruptBody(f"corrupt compressed body from {url} (HTTP {status}: {exc})", url, status)


@dataclass(frozen=True)
class HttpPolicy:
    timeout: float = 30.0
    max_body_bytes: int = 64 * 1024 * 1024
    max_attempts: int = 5
    max_total_seconds: float = 300.0
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    max_retry_after: float = 120.0
    min_interval: float = 0.0
    max_redirects: int = 5
    transient_statuses: frozenset[int] = TRANSIENT_STATUSES


@dataclass
class HttpClient:
    """A source's HTTP client: policy, allowlist, pacing, retries, record/replay."""

    source: str
    allowed_hosts: frozenset[str]
    user_agent: str
    policy: HttpPolicy = field(default_factory=HttpPolicy)
    headers: Mapping[str, str] = field(default_factory=dict)
    transport: httpx.BaseTransport | None = None
    classify: Classifier | None = None
    sleep: Callable[[float], None] = time.sleep
    requests_made: int = 0
    retries_made: int = 0
    _client: httpx.Client = field(init=False)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _last_start: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        headers = {"User-Agent": self.user_agent, **self.headers}
        self._client = httpx.Client(
            headers=headers,
            timeout=self.policy.timeout,
            follow_redirects=False,
            transport=self.transport,
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public --------------------------------------------------------------------------
    def get(
        self,
        url: str,
        *,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        ok: Iterable[int] = (200,),
    ) -> httpx.Response:
        return self.request("GET", url, params=params, headers=headers, ok=ok)

    def get_json(
        self,
        url: str,
        *,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        ok: Iterable[int] = (200,),
    ) -> tuple[httpx.Response, Any]:
        """GET and parse JSON; an HTML page or an empty body is a terminal error."""
        response = self.get(url, params=params, headers=headers, ok=ok)
        return response, parse_json(response)

    def request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        json_body: Any = None,
        ok: Iterable[int] = (200,),
    ) -> httpx.Response:
        ok_statuses = frozenset(ok)
        response: httpx.Response = self._retrying()(
            self._attempt, method, url, params, headers, json_body, ok_statuses
        )
        return response

    def _retrying(self) -> Callable[..., Any]:
        """Run a callable, retrying :class:`TransientHttpError` within the policy's budget."""
        started = time.monotonic()
        policy = self.policy

        def wait(state: tenacity.RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            hinted = exc.retry_after if isinstance(exc, TransientHttpError) else None
            if hinted is not None:
                return min(hinted, policy.max_retry_after)
            exp = policy.backoff_initial * (2 ** (state.attempt_number - 1))
            return float(min(policy.backoff_max, exp) * (0.5 + random.random() / 2))

        def give_up(state: tenacity.RetryCallState) -> bool:
            if state.attempt_number >= policy.max_attempts:
                return True
            return time.monotonic() - started >= policy.max_total_seconds

        def announce(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            if not isinstance(exc, TransientHttpError):
                return
            what = f"HTTP {exc.status}" if exc.status else type(exc.__cause__ or exc).__name__
            if isinstance(exc, CorruptBody):
                what = "corrupt compressed body"
            seconds = state.next_action.sleep if state.next_action else 0.0
            with self._lock:
                self.retries_made += 1
            host = host_of(exc.url) or self.source
            # The details ride on the record for a structured log line (``retry``).
            retry = {
                "host": host,
                "error": what,
                "status": exc.status,
                "attempt": state.attempt_number,
                "max_retries": policy.max_attempts - 1,
                "wait_seconds": round(seconds, 3),
            }
            log.warning(
                "%s from %s, retry %d/%d in %s s",
                what,
                host,
                state.attempt_number,
                policy.max_attempts - 1,
                f"{seconds:.0f}" if seconds >= 1 else f"{seconds:.1f}",
                extra={"event": "http.retry", "retry": retry},
            )

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(TransientHttpError),
            wait=wait,
            stop=give_up,
            sleep=self.sleep,
            before_sleep=announce,
            reraise=True,
        )

        def call(fn: Callable[..., Any], *args: Any) -> Any:
            try:
                return retrying(fn, *args)
            except TransientHttpError as exc:
                exhausted = RetryBudgetExhausted(
                    f"{exc} (gave up after {state_attempts(retrying)} attempts)",
                    exc.url,
                    exc.status,
                )
                exhausted.hint = exc.hint
                raise exhausted from exc

        return call

    # -- one attempt ---------------------------------------------------------------------
    def _pace(self) -> None:
        if self.policy.min_interval <= 0:
            with self._lock:
                self.requests_made += 1
            return
        with self._lock:
            delay = self._last_start + self.policy.min_interval - time.monotonic()
            if delay > 0:
                self.sleep(delay)
            self._last_start = time.monotonic()
            self.requests_made += 1

    def _check_host(self, url: str) -> None:
        host = host_of(url)
        if host not in self.allowed_hosts:
            raise HostNotAllowed(
                f"{self.source}: host {host!r} is not allowed (allowed: "
                f"{', '.join(sorted(self.allowed_hosts))})",
                url,
            )

    def _attempt(
        self,
        method: str,
        url: str,
        params: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
        json_body: Any,
        ok_statuses: frozenset[int],
    ) -> httpx.Response:
        current = url
        current_params = params
        for _ in range(self.policy.max_redirects + 1):
            self._check_host(current)
            self._pace()
            response = self._send(method, current, current_params, headers, json_body)
            if response.status_code in _REDIRECTS and response.status_code not in ok_statuses:
                location = response.headers.get("location")
                if not location:
                    raise TerminalHttpError(
                        f"{self.source}: redirect without a Location from {current}",
                        current,
                        response.status_code,
                    )
                current = urljoin(str(response.request.url), location)
                current_params = None
                continue
            return self._judge(response, ok_statuses)
        raise TerminalHttpError(f"{self.source}: too many redirects from {url}", url)

    def _send(
        self,
        method: str,
        url: str,
        params: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
        json_body: Any,
    ) -> httpx.Response:
        content = None if json_body is None else orjson.dumps(json_body)
        send_headers = dict(headers or {})
        if content is not None:
            send_headers.setdefault("Content-Type", "application/json")
        request = self._client.build_request(
            method, url, params=params, headers=send_headers, content=content
        )
        response = self._open(request)
        try:
            content = b"".join(self._capped_chunks(response, method, url))
        finally:
            response.close()
        kept = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        return httpx.Response(response.status_code, headers=kept, content=content, request=request)

    def _open(self, request: httpx.Request) -> httpx.Response:
        """Send a request, keeping the body as a stream; classify failures to connect."""
        try:
            return self._client.send(request, stream=True)
        except NotRecorded as exc:
            raise TerminalHttpError(str(exc), str(request.url)) from None
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise TransientHttpError(
                f"{type(exc).__name__} for {request.method} {request.url}",
                str(request.url),
            ) from exc

    def _capped_chunks(
        self, response: httpx.Response, method: str, url: str, cap: int | None = None
    ) -> Iterable[bytes]:
        """The decoded body in chunks, refusing more than ``cap`` bytes."""
        cap = self.policy.max_body_bytes if cap is None else cap
        declared = response.headers.get("content-length")
        if declared and is_ascii_digits(declared) and int(declared) > cap:
            raise BodyTooLarge(
                f"{self.source}: body of {declared} bytes exceeds the cap of {cap} bytes "
                f"({method} {url})",
                url,
                response.status_code,
            )
        size = 0
        try:
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > cap:
                    raise BodyTooLarge(
                        f"{self.source}: body exceeds the cap of {cap} bytes ({method} {url})",
                        url,
                        response.status_code,
                    )
                yield chunk
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise TransientHttpError(f"{type(exc).__name__} while reading {url}", url) from None
        except httpx.DecodingError as exc:
            # httpx's decoders raise DecodingError for zlib's, brotli's or zstd's error.
            raise corrupt_body(str(response.request.url), response.status_code, exc) from None

    def download(self, url: str, destination: Path, *, max_bytes: int) -> int:
        """Stream a large body to ``destination`` (retrying transient failures); its size."""

        def attempt() -> int:
            self._check_host(url)
            self._pace()
            response = self._open(self._client.build_request("GET", url))
            partial = destination.with_name(destination.name + ".part")
            try:
                if response.status_code != 200:
                    response.read()
                    self._judge(response, frozenset({200}))
                size = 0
                with partial.open("wb") as out:
                    for chunk in self._capped_chunks(response, "GET", url, max_bytes):
                        out.write(chunk)
                        size += len(chunk)
                partial.replace(destination)
                return size
            finally:
                response.close()
                partial.unlink(missing_ok=True)

        size: int = self._retrying()(attempt)
        return size

    def _judge(self, response: httpx.Response, ok_statuses: frozenset[int]) -> httpx.Response:
        url = str(response.request.url)
        log.info(
            "%s %s: HTTP %d",
            response.request.method,
            url,
            response.status_code,
            extra={"event": "http.response"},
        )
        if self.classify is not None:
            verdict = self.classify(response)
            if verdict is not None:
                raise verdict
        status = response.status_code
        if status in ok_statuses:
            return response
        if status in self.policy.transient_statuses:
            raise TransientHttpError(
                f"HTTP {status} for {url}",
                url,
                status,
                retry_after=parse_retry_after(response.headers.get("retry-after")),
            )
        raise TerminalHttpError(f"HTTP {status} for {url}", url, status)


def state_attempts(retrying: tenacity.Retrying) -> int:
    stats = retrying.statistics
    return int(stats.get("attempt_number", 0)) if isinstance(stats, dict) else 0


def parse_json(response: httpx.Response) -> Any:
    """The JSON body of a response; HTML, empty or malformed bodies are terminal errors."""
    url = str(response.request.url)
    content_type = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    body = response.content
    if not body.strip():
        raise TerminalHttpError(
            f"empty body where JSON was expected: {url}", url, response.status_code
        )
    if "html" in content_type or body.lstrip()[:1] == b"<":
        raise TerminalHttpError(
            f"HTML page where JSON was expected (HTTP {response.status_code}): {url}",
            url,
            response.status_code,
        )
    try:  # integers over 64 bits are refused (CanonicalFormError), never rounded to floats
        return canonical.loads(body, origin=f"JSON from {url}")
    except orjson.JSONDecodeError as exc:
        raise TerminalHttpError(
            f"malformed JSON from {url}: {exc}", url, response.status_code
        ) from None


def make_transport(
    record_dir: Path | None = None,
    replay_dir: Path | None = None,
    inner: httpx.BaseTransport | None = None,
) -> httpx.BaseTransport | None:
    """The transport for ``--record`` / ``--replay`` (or their environment variables)."""
    replay = replay_dir or settings.current().replay
    record = record_dir or settings.current().record
    if replay is not None:
        return ReplayTransport(replay)
    if record is not None:
        return RecordingTransport(inner or httpx.HTTPTransport(), record)
    return inner


@dataclass
class HttpFactory:
    """Builds each source's client with the run's shared settings. The caller names itself
    in ``user_agent``, which every request carries."""

    user_agent: str
    policy: HttpPolicy = field(default_factory=HttpPolicy)
    record_dir: Path | None = None
    replay_dir: Path | None = None
    sleep: Callable[[float], None] = time.sleep
    clients: list[HttpClient] = field(default_factory=list)

    def client(
        self,
        source: str,
        base_urls: Iterable[str],
        *,
        headers: Mapping[str, str] | None = None,
        policy: HttpPolicy | None = None,
        classify: Classifier | None = None,
    ) -> HttpClient:
        client = HttpClient(
            source=source,
            allowed_hosts=frozenset(host_of(u) for u in base_urls),
            user_agent=self.user_agent,
            policy=policy or self.policy,
            headers=dict(headers or {}),
            transport=make_transport(self.record_dir, self.replay_dir),
            classify=classify,
            sleep=self.sleep,
        )
        self.clients.append(client)
        return client

    @property
    def requests_made(self) -> int:
        return sum(c.requests_made for c in self.clients)

    @property
    def retries_made(self) -> int:
        """Transient failures retried, by every client of the factory."""
        return sum(c.retries_made for c in self.clients)

    def close(self) -> None:
        for client in self.clients:
            client.close()
