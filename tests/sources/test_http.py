"""The shared HTTP policy: transient vs terminal, Retry-After, caps, allowlist, replay."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import respx

from pipelines import USER_AGENT, __version__
from sources.http import Endpoint, HttpClient, HttpFactory, HttpPolicy, parse_retry_after
from sources.recording import RecordingTransport, ReplayTransport
from warehouse.errors import BodyTooLarge, HostNotAllowed, RetryBudgetExhausted, TerminalHttpError

API = "https://api.example.test"
TEST_AGENT = "receipts-test/1 (the http policy's tests)"


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def client(policy: HttpPolicy | None = None, sleeps: Sleeps | None = None) -> HttpClient:
    return HttpClient(
        source="test",
        allowed_hosts=frozenset({"api.example.test"}),
        user_agent=TEST_AGENT,
        policy=policy or HttpPolicy(backoff_initial=0.01),
        sleep=sleeps if sleeps is not None else Sleeps(),
    )


@respx.mock
def test_requests_carry_the_user_agent_the_caller_names() -> None:
    route = respx.get(f"{API}/x").respond(200, json={})
    client().get(f"{API}/x")
    assert route.calls.last.request.headers["user-agent"] == TEST_AGENT
    factory = HttpFactory(user_agent=USER_AGENT)
    factory.client("test", [API]).get(f"{API}/x")
    assert route.calls.last.request.headers["user-agent"] == USER_AGENT
    factory.close()


def test_the_user_agent_of_receipts_names_the_tool_and_version() -> None:
    # Recorded demo sessions hold this header byte for byte (tests/demo/test_demo_sessions.py).
    expected = f"receipts/{__version__} (evidence corpora with provenance; python-httpx)"
    assert expected == USER_AGENT


@respx.mock
def test_429_is_retried_honouring_retry_after() -> None:
    route = respx.get(f"{API}/x").mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "7"}),
            httpx.Response(200, json={"ok": True}),
        ]
    )
    sleeps = Sleeps()
    _, body = client(sleeps=sleeps).get_json(f"{API}/x")
    assert body == {"ok": True}
    assert route.call_count == 2
    assert sleeps == [7.0]


@respx.mock
def test_retry_after_zero_is_no_hint_and_backoff_applies() -> None:
    respx.get(f"{API}/x").mock(
        side_effect=[
            httpx.Response(503, headers={"Retry-After": "0"}),
            httpx.Response(503),
            httpx.Response(200, json=[]),
        ]
    )
    sleeps = Sleeps()
    client(HttpPolicy(backoff_initial=1.0, backoff_max=10.0), sleeps).get(f"{API}/x")
    assert len(sleeps) == 2
    assert 0.5 <= sleeps[0] <= 1.0 and 1.0 <= sleeps[1] <= 2.0


@respx.mock
def test_connect_errors_are_transient() -> None:
    respx.get(f"{API}/x").mock(
        side_effect=[httpx.ConnectError("reset"), httpx.Response(200, json={})]
    )
    assert client().get(f"{API}/x").status_code == 200


@respx.mock
def test_retries_are_bounded() -> None:
    route = respx.get(f"{API}/x").respond(502)
    with pytest.raises(RetryBudgetExhausted, match="gave up after 3 attempts"):
        client(HttpPolicy(max_attempts=3, backoff_initial=0.01)).get(f"{API}/x")
    assert route.call_count == 3


@pytest.mark.parametrize("status", [400, 401, 404, 409, 500])
@respx.mock
def test_terminal_statuses_are_reported_at_once(status: int) -> None:
    route = respx.get(f"{API}/x").respond(status)
    with pytest.raises(TerminalHttpError, match=f"HTTP {status}"):
        client().get(f"{API}/x")
    assert route.call_count == 1


@respx.mock
def test_redirect_to_another_host_is_refused() -> None:
    respx.get(f"{API}/x").respond(302, headers={"Location": "https://evil.test/x"})
    with pytest.raises(HostNotAllowed, match=r"evil\.test"):
        client().get(f"{API}/x")


@respx.mock
def test_redirect_on_the_same_host_is_followed() -> None:
    respx.get(f"{API}/x").respond(301, headers={"Location": "/y"})
    respx.get(f"{API}/y").respond(200, json={"moved": True})
    assert client().get_json(f"{API}/x")[1] == {"moved": True}


def test_requests_outside_the_allowlist_are_refused_before_sending() -> None:
    with pytest.raises(HostNotAllowed):
        client().get("https://elsewhere.test/x")


@respx.mock
def test_body_over_the_cap_is_refused() -> None:
    respx.get(f"{API}/big").respond(200, content=b"x" * 2000)
    with pytest.raises(BodyTooLarge, match="cap of 1000 bytes"):
        client(HttpPolicy(max_body_bytes=1000)).get(f"{API}/big")


@respx.mock
def test_a_declared_length_in_other_digits_is_not_read_as_a_size() -> None:
    """A superscript two passes ``str.isdigit`` and makes ``int`` raise: the length is
    ignored and the body counted as it streams."""
    header = [(b"content-length", "\u00b2".encode())]
    respx.get(f"{API}/odd").respond(200, content=b"x" * 2000, headers=header)
    with pytest.raises(BodyTooLarge, match="cap of 1000 bytes"):
        client(HttpPolicy(max_body_bytes=1000)).get(f"{API}/odd")


@respx.mock
def test_html_where_json_was_expected_is_terminal() -> None:
    respx.get(f"{API}/x").respond(
        200,
        text="<html><body>Service Unavailable</body></html>",
        headers={"content-type": "text/html"},
    )
    with pytest.raises(TerminalHttpError, match="HTML page where JSON was expected"):
        client().get_json(f"{API}/x")


@respx.mock
def test_empty_body_where_json_was_expected_is_terminal() -> None:
    respx.get(f"{API}/x").respond(200, content=b"")
    with pytest.raises(TerminalHttpError, match="empty body"):
        client().get_json(f"{API}/x")


def test_parse_retry_after() -> None:
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after("0") is None
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    # Digits of other scripts are not a delay: ignored, like any other unreadable value.
    assert parse_retry_after("\u0661\u0662") is None and parse_retry_after("\u00b2") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0


def test_base_urls_come_from_env_then_manifest_then_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    endpoint = Endpoint("forum", "https://forum.example/", "RECEIPTS_TEST_FORUM_URL")
    assert endpoint.base_url() == "https://forum.example"
    assert endpoint.default_host == "forum.example"
    assert endpoint.base_url("https://community.example/") == "https://community.example"
    monkeypatch.setenv("RECEIPTS_TEST_FORUM_URL", "http://127.0.0.1:9/")
    assert endpoint.base_url("https://community.example") == "http://127.0.0.1:9"


def test_record_then_replay_offline(tmp_path: Path) -> None:
    served = []

    def upstream(request: httpx.Request) -> httpx.Response:
        served.append(request.url)
        if len(served) == 1:
            return httpx.Response(429, headers={"Retry-After": "1"})
        return httpx.Response(200, json={"n": len(served)}, headers={"set-cookie": "s=secret"})

    recording = RecordingTransport(httpx.MockTransport(upstream), tmp_path)
    live = HttpClient(
        "test",
        frozenset({"api.example.test"}),
        TEST_AGENT,
        headers={"Authorization": "Bearer not-a-real-token"},
        transport=recording,
        sleep=Sleeps(),
    )
    assert live.get_json(f"{API}/x", params={"b": 2, "a": 1})[1] == {"n": 2}

    saved = list(tmp_path.rglob("*.json"))
    assert len(saved) == 1
    text = saved[0].read_text()
    assert "not-a-real-token" not in text and "secret" not in text
    assert [r["status"] for r in json.loads(text)["responses"]] == [429, 200]

    replay = HttpClient(
        "test",
        frozenset({"api.example.test"}),
        TEST_AGENT,
        transport=ReplayTransport(tmp_path),
        sleep=Sleeps(),
    )
    # Query order does not matter; the 429 is replayed, then the 200.
    assert replay.get_json(f"{API}/x", params={"a": 1, "b": 2})[1] == {"n": 2}
    with pytest.raises(TerminalHttpError, match="not in the recorded session"):
        replay.get(f"{API}/never")


def test_factory_counts_requests_and_pins_allowlist() -> None:
    def upstream(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={})

    factory = HttpFactory(user_agent=USER_AGENT)
    c = factory.client("test", [API])
    c._client = httpx.Client(transport=httpx.MockTransport(upstream))
    c.get(f"{API}/a")
    c.get(f"{API}/b")
    assert factory.requests_made == 2
    assert c.allowed_hosts == frozenset({"api.example.test"})


@respx.mock
def test_download_streams_to_a_file_with_a_cap(tmp_path: Path) -> None:
    respx.get(f"{API}/f.zip").respond(200, content=b"z" * 5000)
    dest = tmp_path / "f.zip"
    assert client().download(f"{API}/f.zip", dest, max_bytes=10_000) == 5000
    assert dest.read_bytes() == b"z" * 5000
    with pytest.raises(BodyTooLarge):
        client().download(f"{API}/f.zip", tmp_path / "g.zip", max_bytes=100)
    assert not (tmp_path / "g.zip").exists()


@respx.mock
def test_pacing_spaces_requests() -> None:
    respx.get(f"{API}/x").respond(200, json={})
    sleeps = Sleeps()
    paced = client(HttpPolicy(min_interval=10.0), sleeps)
    paced.get(f"{API}/x")
    paced.get(f"{API}/x")
    assert len(sleeps) == 1 and 9.0 < sleeps[0] <= 10.0
