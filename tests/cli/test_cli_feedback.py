"""What the command line says while it works and when it fails: visible retries, hints,
-q/-v, and errors as JSON under --json."""

from __future__ import annotations

import json
from pathlib import Path

from fakes.nhtsa import FakeNhtsa
from tests.conftest import REPO, cli

MANIFEST = REPO / "manifests" / "cr-v-aeb.toml"


def test_a_retry_prints_one_line_naming_the_status_host_and_wait(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    fake_nhtsa.fail("/recalls/recallsByVehicle", 503, retry_after="1", modelYear="2018")
    result = cli("ingest", MANIFEST, "--warehouse", warehouse_path)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if "retry" in line]
    assert len(lines) == 1
    assert lines[0].startswith("HTTP 503 from ") and lines[0].endswith("retry 1/4 in 1 s")


def test_verbose_names_every_request(fake_nhtsa: FakeNhtsa, warehouse_path: Path) -> None:
    result = cli("-v", "ingest", MANIFEST, "--warehouse", warehouse_path)
    assert result.exit_code == 0
    requests = [line for line in result.stderr.splitlines() if line.startswith("GET ")]
    assert requests and all(line.endswith(": HTTP 200") or "HTTP 400" in line for line in requests)
    assert not any(
        line.startswith("GET ")
        for line in cli("ls", "--warehouse", warehouse_path).stderr.splitlines()
    )


def test_quiet_keeps_stderr_for_errors(fake_nhtsa: FakeNhtsa, warehouse_path: Path) -> None:
    fake_nhtsa.fail("/recalls/recallsByVehicle", 503, retry_after="1", modelYear="2018")
    result = cli("-q", "ingest", MANIFEST, "--warehouse", warehouse_path)
    assert result.exit_code == 0
    assert result.stderr == ""


def test_a_network_failure_says_its_prefix_once_and_suggests_replay(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    fake_nhtsa.fail("/recalls/recallsByVehicle", 503, times=10, retry_after="1", modelYear="2018")
    result = cli("ingest", MANIFEST, "--warehouse", warehouse_path)
    assert result.exit_code == 1
    failed = [line for line in result.stdout.splitlines() if "FAILED" in line]
    assert failed and all(line.count("nhtsa:") == 1 for line in failed)
    assert "hint: offline or behind a proxy? `--replay DIR`" in result.stdout
    payload = json.loads(cli("runs", "--warehouse", warehouse_path, "--json").stdout)
    assert "--replay" in payload[0]["failures"][0]["hint"]


def test_under_json_an_error_is_json_on_stdout_with_the_same_exit_code(tmp_path: Path) -> None:
    result = cli("manifest", "check", tmp_path / "missing.toml", "--json")
    assert result.exit_code == 2
    payload = json.loads(result.stdout)
    assert payload["exit_code"] == 2
    assert payload["error"]["type"] == "ManifestError"
    assert "missing.toml" in payload["error"]["message"]
    assert set(payload["error"]) == {"type", "message", "hint"}
    plain = cli("manifest", "check", tmp_path / "missing.toml")
    assert plain.stdout == "" and plain.stderr.startswith("receipts: ")


def test_a_usage_error_inside_a_command_is_json_too(tmp_path: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    result = cli("drift", "--warehouse", warehouse, "--json", "--format", "text")
    assert result.exit_code == 2
    payload = json.loads(result.stdout)
    assert payload["error"]["type"] == "UsageError" and payload["exit_code"] == 2
