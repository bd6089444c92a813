"""``backfill nhtsa`` hands its run to the observers too: the metrics file, and a lineage
endpoint that is down is a warning in the backfill's ledger row, its exit code unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.backfill.test_nhtsa_backfill import complaints_file
from tests.conftest import cli
from tests.observe.receivers import closed_port


def test_a_backfill_writes_metrics_and_records_an_undelivered_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = complaints_file(tmp_path)
    config = tmp_path / "openlineage.yml"
    port = closed_port()
    config.write_text(
        f"transport:\n  type: http\n  url: http://127.0.0.1:{port}\n  retry:\n    total: 0\n"
    )
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(config))
    monkeypatch.setenv("OPENLINEAGE_URL", f"http://127.0.0.1:{port}")
    metrics = tmp_path / "receipts.prom"
    warehouse = tmp_path / "w.duckdb"
    result = cli(
        "backfill", "nhtsa", "--warehouse", warehouse, "--json", "--file", path,
        "--kind", "complaints", "--metrics-file", metrics,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["documents"]["new"] == 5
    [warning] = report["observer_warnings"]
    assert warning["entry"] == "lineage" and "START event not sent" in warning["warning"]
    [run] = json.loads(cli("runs", "--warehouse", warehouse, "--json").stdout)
    assert run["command"] == "backfill"
    assert warning in run["warnings"]
    found = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(metrics.read_text())
        for s in family.samples
    }
    labels = (("corpus", "none"), ("outcome", "new"), ("source", "nhtsa"))
    assert found[("receipts_last_run_documents", labels)] == 5
