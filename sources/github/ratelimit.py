"""GitHub's rate limits: how long a limited request waits, and when it fails instead.

``GITHUB_TOKEN`` (when set) is sent as a bearer token (see :mod:`sources.github.api`). When
GitHub answers 403/429 for a rate limit, the wait is its ``retry-after``, else the time until
``x-ratelimit-reset`` when ``x-ratelimit-remaining`` is 0, else at least one minute (doubling
while the limit persists). The client waits when that is at most
``RECEIPTS_GITHUB_MAX_RATE_WAIT`` seconds (default 60); otherwise the entry fails at once
with the time at which to retry.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx

from sources.digits import is_ascii_digits
from sources.http import parse_retry_after
from warehouse import settings
from warehouse.errors import HttpError, RateLimited, TransientHttpError

ENV_TOKEN = "GITHUB_TOKEN"
ENV_MAX_RATE_WAIT = "RECEIPTS_GITHUB_MAX_RATE_WAIT"
DEFAULT_MAX_RATE_WAIT = 60.0
# FetchContext.options key under which a run may pass a RateLimitPolicy (tests, embedders).
RATE_LIMIT_OPTION = "github_rate_limit"


@dataclass(frozen=True)
class RateLimitPolicy:
    """How long a rate-limited request may wait for the reset, and the clock it reads."""

    max_wait: float = DEFAULT_MAX_RATE_WAIT
    clock: Callable[[], float] = time.time

    @classmethod
    def from_env(cls) -> RateLimitPolicy:
        return cls(max_wait=settings.current().github_max_rate_wait)


def rate_limit_policy(options: dict[str, object]) -> RateLimitPolicy:
    given = options.get(RATE_LIMIT_OPTION)
    return given if isinstance(given, RateLimitPolicy) else RateLimitPolicy.from_env()


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _utc(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


SECONDARY_MIN_WAIT = 60.0  # GitHub: with no retry-after and no reset, wait at least 1 min


@dataclass
class RateLimitStreak:
    """Rate-limited answers in a row on one client, reset by any other answer: a limit
    that persists is waited out longer each time (GitHub: "back off exponentially")."""

    count: int = 0


def _is_rate_limit_body(response: httpx.Response) -> bool:
    """A 403 whose body says it is a (secondary) rate limit, not a plain refusal."""
    return b"rate limit" in response.content[:4096].lower()


def rate_limit_verdict(
    response: httpx.Response,
    policy: RateLimitPolicy,
    authenticated: bool,
    streak: RateLimitStreak | None = None,
) -> HttpError | None:
    """Classify a 403/429 that is a rate limit: wait if it lifts soon enough, else fail.

    GitHub's rule, in order: a ``retry-after`` says how long to wait; else
    ``x-ratelimit-remaining: 0`` says to wait until ``x-ratelimit-reset`` (epoch seconds);
    else (a secondary limit may come with requests remaining, the raw host's 429 with no
    header at all) wait at least one minute, doubling while the limit persists. A wait past
    ``policy.max_wait`` fails the entry at once with the time to retry: the raw host's
    blocks can last tens of minutes. A 429 is never retried on a short backoff.
    """
    status = response.status_code
    if status not in (403, 429):
        if streak is not None:
            streak.count = 0
        return None
    headers = response.headers
    url = str(response.request.url)
    clock = policy.clock()
    retry_after = parse_retry_after(headers.get("retry-after"), now=clock)
    reset_header = headers.get("x-ratelimit-reset", "").strip()
    if retry_after is not None:
        wait = retry_after
        how = f"retry-after {retry_after:.0f} s"
    elif headers.get("x-ratelimit-remaining") == "0" and is_ascii_digits(reset_header):
        wait = max(0.0, float(reset_header) - clock) + 1.0
        how = ""
    elif status == 429 or _is_rate_limit_body(response):
        times = streak.count if streak is not None else 0
        wait = SECONDARY_MIN_WAIT * (2**times)
        how = "no reset given" + (f", limited {times + 1} times in a row" if times else "")
    else:
        return None
    if streak is not None:
        streak.count += 1
    limit = headers.get("x-ratelimit-limit")
    resource = headers.get("x-ratelimit-resource")
    details = ", ".join(
        part
        for part in (
            f"resource {resource}" if resource else "",
            f"limit {limit}" if limit else "",
            how,
        )
        if part
    )
    what = f"GitHub rate limit (HTTP {status})" if how else "GitHub rate limit exhausted"
    what += f" ({details})" if details else ""
    if wait <= policy.max_wait:
        return TransientHttpError(
            f"github: {what} for {url}; waiting {wait:.0f} s", url, status, retry_after=wait
        )
    hint = "" if authenticated else f", or set {ENV_TOKEN} for a higher limit"
    return RateLimited(
        f"github: {what} for {url}; it lifts at {_utc(clock + wait)} at the earliest "
        f"(in {_duration(wait)}), more than {ENV_MAX_RATE_WAIT}={policy.max_wait:.0f} s "
        f"away: retry after that{hint}"
        if how
        else f"github: {what} for {url}; it resets at {_utc(clock + wait - 1.0)} "
        f"(in {_duration(wait)}): retry after that{hint}",
        url,
        status,
    )
