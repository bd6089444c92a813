"""Rate limits: wait for a near reset, fail with the retry time for a far one, use the token's
own bucket, honour a secondary limit's Retry-After. Time is the fake's clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from fakes.github import FakeClock, FakeGitHub, manifest_toml, serve
from pipelines import USER_AGENT
from pipelines.ingest import IngestOptions, RunResult, run_ingest
from pipelines.manifest import load_manifest
from sources.github.api import GithubClients
from sources.github.pins import RefResolver
from sources.github.ratelimit import RATE_LIMIT_OPTION, RateLimitPolicy, rate_limit_verdict
from sources.http import HttpFactory
from tests.conftest import write_manifest
from warehouse.errors import RateLimited, TransientHttpError
from warehouse.store import Warehouse

REPO_NAME = "octo/hyphae"
FILES = {"a.md": b"a", "b.md": b"b"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def github(clock: FakeClock) -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(clock=clock, token="ghp_valid")) as fake:
        yield fake


def run(
    github: FakeGitHub, clock: FakeClock, tmp_path: Path, wh: Warehouse, max_wait: float = 60
) -> RunResult:
    sha = github.push(REPO_NAME, FILES)
    manifest = write_manifest(
        tmp_path, manifest_toml(REPO_NAME, sha, {p: "markdown" for p in FILES})
    )
    policy = RateLimitPolicy(max_wait=max_wait, clock=clock)
    return run_ingest(
        load_manifest(manifest),
        wh,
        http=HttpFactory(user_agent=USER_AGENT, sleep=clock.sleep),
        options=IngestOptions(extra={RATE_LIMIT_OPTION: policy}),
    )


def test_a_near_reset_is_waited_for(
    github: FakeGitHub, clock: FakeClock, tmp_path: Path, wh: Warehouse
) -> None:
    github.exhaust(reset_in=30)
    result = run(github, clock, tmp_path, wh)
    assert result.status == "ok", result.failures
    assert result.counts["github"]["new"] == 2
    assert clock.slept == [31.0]
    # The first request (the repository's default branch) waited; each file was asked once.
    assert len(github.raw_requests) == 2
    assert github.api_requests[0].url.path == github.api_requests[1].url.path


def test_a_far_reset_fails_with_when_to_retry(
    github: FakeGitHub, clock: FakeClock, tmp_path: Path, wh: Warehouse
) -> None:
    github.exhaust(reset_in=45 * 60)
    result = run(github, clock, tmp_path, wh)
    assert result.status == "failed"
    [failure] = result.failures
    reset = datetime.fromtimestamp(int(clock() + 45 * 60), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert "GitHub rate limit exhausted (resource core, limit 60)" in failure["reason"]
    assert f"it resets at {reset} (in 45 min): retry after that" in failure["reason"]
    assert "or set GITHUB_TOKEN for a higher limit" in failure["reason"]
    assert clock.slept == []
    assert len(github.raw_requests) == 1  # the entry stops at once; no file after it is tried


def test_the_token_has_its_own_bucket(
    github: FakeGitHub,
    clock: FakeClock,
    tmp_path: Path,
    wh: Warehouse,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    github.exhaust(reset_in=45 * 60)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_valid")
    result = run(github, clock, tmp_path, wh)
    assert result.status == "ok", result.failures
    # two files, one tree, the repository's default branch and one comparison
    assert github.remaining(authenticated=True) == 5_000 - 2 - 1 - 2


def test_an_authenticated_caller_is_not_told_to_set_a_token(
    github: FakeGitHub,
    clock: FakeClock,
    tmp_path: Path,
    wh: Warehouse,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    github.exhaust(reset_in=2 * 3600, authenticated=True)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_valid")
    result = run(github, clock, tmp_path, wh)
    reason = result.failures[0]["reason"]
    assert "limit 5000" in reason and "in 120 min" in reason
    assert "GITHUB_TOKEN" not in reason and "ghp_valid" not in reason


def test_the_wait_threshold_is_configurable(
    github: FakeGitHub,
    clock: FakeClock,
    tmp_path: Path,
    wh: Warehouse,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    github.exhaust(reset_in=300)
    monkeypatch.setenv("RECEIPTS_GITHUB_MAX_RATE_WAIT", "600")
    assert RateLimitPolicy.from_env().max_wait == 600
    assert run(github, clock, tmp_path, wh, max_wait=600).status == "ok"
    assert clock.slept == [301.0]


def test_a_secondary_limit_is_retried_after_its_retry_after(
    github: FakeGitHub, clock: FakeClock
) -> None:
    sha = github.push(REPO_NAME, FILES)
    github.secondary_limit(retry_after=5, times=2)
    http = HttpFactory(user_agent=USER_AGENT, sleep=clock.sleep)
    resolve = RefResolver(GithubClients(http, RateLimitPolicy(clock=clock)))
    assert resolve(REPO_NAME, "main") == sha
    assert clock.slept == [5.0, 5.0]


def response(status: int, headers: dict[str, str]) -> httpx.Response:
    """A response whose header values go over the wire as UTF-8 (as a server may send them)."""
    return httpx.Response(
        status,
        headers=[(k.encode(), v.encode()) for k, v in headers.items()],
        request=httpx.Request("GET", "https://api.github.com/x"),
    )


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (200, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1000"}, None),
        (403, {}, None),  # a plain refusal stays terminal under the shared policy
        (429, {}, TransientHttpError),  # a bare 429: at least one minute, never a short backoff
        (403, {"x-ratelimit-remaining": "5", "x-ratelimit-reset": "1000"}, None),
        (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1010"}, TransientHttpError),
        # a reset that is not ASCII digits is unreadable, as if absent (float() reads both)
        (
            403,
            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "\u0661\u0660\u0661\u0660"},
            None,
        ),
        (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "10\u00b2"}, None),
        (429, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "9999"}, RateLimited),
        (403, {"retry-after": "30"}, TransientHttpError),
        (403, {"retry-after": "3600"}, RateLimited),
        # retry-after comes first, even beside an exhausted bucket's far reset
        (
            429,
            {"retry-after": "5", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "9999"},
            TransientHttpError,
        ),
    ],
)
def test_rate_limit_verdicts(
    status: int, headers: dict[str, str], expected: type[Exception] | None
) -> None:
    verdict = rate_limit_verdict(
        response(status, headers), RateLimitPolicy(max_wait=60, clock=lambda: 1000.0), False
    )
    assert (None if verdict is None else type(verdict)) is expected
    if isinstance(verdict, TransientHttpError):
        if "retry-after" in headers:
            assert verdict.retry_after == float(headers["retry-after"])
        elif "x-ratelimit-reset" in headers:
            assert verdict.retry_after == 11.0
        else:
            assert verdict.retry_after == 60.0


def test_a_bare_429_from_the_raw_host_waits_a_minute_not_a_short_backoff(
    github: FakeGitHub, clock: FakeClock, tmp_path: Path, wh: Warehouse
) -> None:
    github.block_raw(30)
    result = run(github, clock, tmp_path, wh)
    assert result.status == "ok", result.failures
    assert clock.slept == [60.0]
    assert len(github.raw_requests) == 3


def test_a_long_raw_block_fails_the_entry_at_once_with_when_to_retry(
    github: FakeGitHub, clock: FakeClock, tmp_path: Path, wh: Warehouse
) -> None:
    github.block_raw(30 * 60)
    start = clock()
    result = run(github, clock, tmp_path, wh)
    assert result.status == "failed"
    [failure] = result.failures
    assert clock.slept == [60.0]  # one wait of the minimum, then no more than the maximum
    retry_at = datetime.fromtimestamp(start + 60 + 120, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert "GitHub rate limit (HTTP 429)" in failure["reason"]
    assert f"it lifts at {retry_at} at the earliest (in 2 min)" in failure["reason"]
    assert "retry after that" in failure["reason"]
    assert len(github.raw_requests) == 2  # no other file of the entry is tried


def test_a_secondary_limit_without_retry_after_waits_at_least_a_minute(
    github: FakeGitHub, clock: FakeClock
) -> None:
    sha = github.push(REPO_NAME, FILES)
    github.secondary_limit(retry_after=None)
    http = HttpFactory(user_agent=USER_AGENT, sleep=clock.sleep)
    resolve = RefResolver(GithubClients(http, RateLimitPolicy(clock=clock)))
    assert resolve(REPO_NAME, "main") == sha
    assert clock.slept == [60.0]
