"""GitHub's HTTP endpoints: a client per endpoint family, and raw file downloads.

The token (``GITHUB_TOKEN``) goes only to the base URLs of the environment or the defaults,
never to one that only a manifest names.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sources.github.entry import SOURCE_NAME
from sources.github.ratelimit import RateLimitPolicy, RateLimitStreak, rate_limit_verdict
from sources.http import Endpoint, HttpClient, HttpFactory
from warehouse import settings
from warehouse.errors import BodyTooLarge, FileRefused

# Raw file bytes at a commit, and the REST API (commits, refs); an entry's ``raw_url`` /
# ``api_url`` may name a mirror.
RAW = Endpoint("github_raw", "https://raw.githubusercontent.com", "RECEIPTS_GITHUB_RAW_URL")
API = Endpoint("github_api", "https://api.github.com", "RECEIPTS_GITHUB_API_URL")


def github_client(
    http: HttpFactory,
    endpoint: Endpoint,
    manifest_value: str | None = None,
    *,
    max_bytes: int | None = None,
    rate_limits: RateLimitPolicy | None = None,
) -> tuple[HttpClient, str]:
    """A client for one GitHub endpoint family (:data:`RAW` or :data:`API`) and its base
    URL. The token goes only to a base URL that the manifest did not choose."""
    base = endpoint.base_url(manifest_value)
    rate_limits = rate_limits or RateLimitPolicy.from_env()
    token = (settings.secrets().github_token or "").strip()
    headers: dict[str, str] = {}
    if token and base == endpoint.base_url():
        headers["Authorization"] = f"Bearer {token}"
    if endpoint == API:
        headers["Accept"] = "application/vnd.github+json"
        headers["X-GitHub-Api-Version"] = "2022-11-28"
    authenticated = "Authorization" in headers
    policy = replace(
        http.policy,
        max_body_bytes=max_bytes or http.policy.max_body_bytes,
        max_retry_after=max(http.policy.max_retry_after, rate_limits.max_wait + 1.0),
    )
    streak = RateLimitStreak()
    client = http.client(
        SOURCE_NAME,
        [base],
        headers=headers,
        policy=policy,
        classify=lambda response: rate_limit_verdict(response, rate_limits, authenticated, streak),
    )
    return client, base


class GithubClients:
    """One client per (endpoint family, manifest base URL, size cap), built on first use, so
    work that needs no request builds none."""

    def __init__(self, http: HttpFactory, rate_limits: RateLimitPolicy | None = None) -> None:
        self.http = http
        self.rate_limits = rate_limits
        self._built: dict[tuple[Endpoint, str | None, int | None], tuple[HttpClient, str]] = {}

    def get(
        self, endpoint: Endpoint, manifest_value: str | None = None, max_bytes: int | None = None
    ) -> tuple[HttpClient, str]:
        key = (endpoint, manifest_value, max_bytes)
        if key not in self._built:
            self._built[key] = github_client(
                self.http,
                endpoint,
                manifest_value,
                max_bytes=max_bytes,
                rate_limits=self.rate_limits,
            )
        return self._built[key]


@dataclass(frozen=True)
class RawAnswer:
    """What the raw host answered for a file: its bytes and the ``content-type`` it gave."""

    body: bytes
    content_type: str

    @property
    def is_html(self) -> bool:
        """The raw host serves every file as ``text/plain`` with ``X-Content-Type-Options:
        nosniff`` (GitHub blog, 2013-04-24, "Heads up: nosniff header support coming to
        Chrome and Firefox"): a ``text/html`` answer is a proxy's or CDN's page."""
        return self.content_type.split(";", 1)[0].strip().lower() == "text/html"


def fetch_raw(client: HttpClient, url: str, path: str) -> RawAnswer | None:
    """The raw host's answer at ``url``; None when the file does not exist there (404)."""
    try:
        response = client.get(url, ok=(200, 404))
    except BodyTooLarge as exc:
        raise FileRefused(f"{path}: {exc}") from None
    if response.status_code == 404:
        return None
    return RawAnswer(response.content, response.headers.get("content-type", ""))


def download_raw(client: HttpClient, url: str, path: str) -> bytes | None:
    """The raw bytes at ``url``; None when the file does not exist there (404)."""
    answer = fetch_raw(client, url, path)
    return None if answer is None else answer.body
