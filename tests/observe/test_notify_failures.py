"""A notification that cannot be delivered (the receiver is down, too slow, or answers 500)
is a warning of the run, on stderr, in ``--json`` and in the run ledger; the refresh's
result and exit code stay what they were. No piece of a notify URL (Apprise keeps tokens
and passwords in it) is ever printed or stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import cli, write_manifest
from tests.observe.receivers import closed_port, receiver
from tests.observe.test_notify import refresh, synthetic

SECRETS = ("hunter22pass", "T0KENxyz123", "abcdSECRETquery")


def secret_url(port: int) -> str:
    return f"json://user:{SECRETS[0]}@127.0.0.1:{port}/hooks/{SECRETS[1]}?-token={SECRETS[2]}"


def drifted(tmp_path: Path, warehouse_path: Path) -> Path:
    manifest = write_manifest(tmp_path, synthetic(2))
    assert refresh(manifest, warehouse_path).exit_code == 0
    write_manifest(tmp_path, synthetic(2, changed=100.0))
    return manifest


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


@pytest.mark.parametrize("how", ["down", "slow", "500"])
def test_an_undeliverable_notification_is_a_warning_not_a_failure(
    tmp_path: Path, warehouse_path: Path, how: str
) -> None:
    manifest = drifted(tmp_path, warehouse_path)
    with receiver(status=500 if how == "500" else 200, delay=3.0 if how == "slow" else 0) as hook:
        port = closed_port() if how == "down" else hook.port
        result = refresh(
            manifest,
            warehouse_path,
            "--notify",
            secret_url(port),
            "--notify-timeout",
            "0.5",
            "--json",
            "--fail-on-drift",
        )
    assert result.exit_code == 3  # drift found, as without the notification
    report = json.loads(result.stdout)
    assert report["run"]["status"] == "ok" and report["push"]["status"] == "ok"
    assert report["drift"]["counts"]["synthetic"]["changed"] == 2
    [warning] = report["observer_warnings"]
    expected = "notify URL 1 (json://…): not delivered (unreachable, too slow or refused)"
    assert warning == {"source": "observe", "entry": "notify", "warning": expected}
    assert expected in result.stderr
    if how != "down":
        assert len(hook.posts) == 1  # it was tried once
    runs = cli("runs", "--warehouse", warehouse_path, "--json")
    [latest, _] = json.loads(runs.stdout)
    assert warning in latest["warnings"]
    assert_no_secret(result.stdout, result.stderr, runs.stdout)


def test_secrets_stay_out_of_a_delivered_run_and_of_an_unsupported_url(
    tmp_path: Path, warehouse_path: Path
) -> None:
    manifest = drifted(tmp_path, warehouse_path)
    with receiver() as hook:
        result = refresh(
            manifest,
            warehouse_path,
            "--notify",
            secret_url(hook.port),
            "--notify",
            f"nosuchscheme://{SECRETS[1]}/{SECRETS[2]}",
            "--json",
        )
    assert result.exit_code == 0, result.output
    [post] = hook.posts
    assert post["path"] == f"/hooks/{SECRETS[1]}?token={SECRETS[2]}"
    [warning] = json.loads(result.stdout)["observer_warnings"]
    assert warning["warning"] == (
        "notify URL 2 (nosuchscheme://…): not a URL Apprise supports; nothing sent"
    )
    runs = cli("runs", "--warehouse", warehouse_path, "--json").stdout
    assert_no_secret(result.stdout, result.stderr, runs)


def test_the_manifest_and_the_environment_name_urls_and_events(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with receiver() as first, receiver() as second, receiver() as third:
        table = f'[notify]\nurls = ["{first.url("json")}"]\nevents = ["unseen"]\n'
        manifest = write_manifest(tmp_path, synthetic(2) + table)
        assert refresh(manifest, warehouse_path).exit_code == 0
        write_manifest(tmp_path, synthetic(2, changed=100.0) + table)
        env = {"RECEIPTS_NOTIFY": f"{second.url('json')}, {third.url('json')}"}
        assert refresh(manifest, warehouse_path, env=env).exit_code == 0
        assert (first.posts, second.posts, third.posts) == ([], [], [])  # drift: not asked
        write_manifest(
            tmp_path, synthetic(2, changed=50.0, seed=1) + table.replace("unseen", "drift")
        )
        assert refresh(manifest, warehouse_path, env=env).exit_code == 0
    assert len(first.posts) == len(second.posts) == len(third.posts) == 1
    assert first.bodies[0]["title"] == "receipts refresh s: drift found"


@pytest.mark.parametrize(
    ("table", "error"),
    [
        ('[notify]\nurls = ["json://h/x"]\nevents = ["late"]\n', "unknown events ['late']"),
        ('[notify]\nurls = ["hooks.example/T0KENxyz123"]\n', "url 1 is not a URL (SCHEME://...)"),
        ('[notify]\nurl = "json://h"\n', "'url': unknown field"),
    ],
)
def test_a_bad_notify_table_is_one_line_naming_it(
    tmp_path: Path, warehouse_path: Path, table: str, error: str
) -> None:
    manifest = write_manifest(tmp_path, synthetic(1) + table)
    result = refresh(manifest, warehouse_path)
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert "[notify]" in line and error in line
    assert "T0KENxyz123" not in line


def test_a_run_stopped_by_an_error_is_a_failed_run_for_the_observers(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sanity half configured: refresh refuses before any ingest (exit 2). The message says
    so, the metrics file records the failure, and the exit code and error line stay."""
    monkeypatch.setenv("SANITY_PROJECT_ID", "abc123")
    for name in ("SANITY_DATASET", "SANITY_TOKEN", "SANITY_API_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    manifest = write_manifest(tmp_path, synthetic(1))
    metrics = tmp_path / "receipts.prom"
    with receiver() as hook:
        result = cli(
            "refresh", manifest, "--warehouse", warehouse_path,
            "--notify", hook.url("json"), "--metrics-file", metrics,
        )  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.startswith("receipts: Sanity is half configured: SANITY_PROJECT_ID set")
    [post] = hook.bodies
    assert post["title"] == "receipts refresh s: the run failed"
    lines = post["message"].splitlines()
    assert lines[0].startswith("refresh s: failed (run -, ")
    assert lines[1:3] == [
        "FAILED: 1 failure(s)",
        "  UsageError: Sanity is half configured: SANITY_PROJECT_ID set but "
        + lines[2].split(" set but ", 1)[1],
    ]
    assert 'receipts_last_run_success{corpus="s",command="refresh"} 0' in metrics.read_text()


def test_a_manifest_that_does_not_load_still_notifies_the_command_line_urls(
    tmp_path: Path, warehouse_path: Path
) -> None:
    manifest = write_manifest(tmp_path, "[corpus]\nname = 'S'\n")
    with receiver() as hook:
        result = refresh(manifest, warehouse_path, "--notify", hook.url("json"))
    assert result.exit_code == 2
    [post] = hook.bodies
    assert post["title"] == "receipts refresh: the run failed"
    assert "  ManifestError: " in post["message"]


def test_an_undeliverable_notification_is_one_json_log_line(
    tmp_path: Path, warehouse_path: Path
) -> None:
    """With ``--log-format json`` the observers' warning is a log line like every other:
    one JSON object, no secret."""
    manifest = drifted(tmp_path, warehouse_path)
    result = cli(
        "--log-format",
        "json",
        "refresh",
        manifest,
        "--warehouse",
        warehouse_path,
        "--out",
        manifest.parent / "s.ndjson",
        "--notify",
        secret_url(closed_port()),
        "--notify-timeout",
        "0.5",
    )
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    warned = [line for line in lines if "not delivered" in line["message"]]
    assert len(warned) == 1 and warned[0]["level"] == "warning"
    assert_no_secret(result.stderr)
