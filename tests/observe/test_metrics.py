"""``--metrics-file``: the Prometheus text format (node_exporter's textfile collector),
read back with Prometheus's own parser (``prometheus_client.parser``), rewritten atomically
and keeping the other corpora's series."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import cli, write_manifest
from tests.observe.test_notify import refresh, synthetic


def samples(path: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = path.read_text()
    out = {}
    for family in text_string_to_metric_families(text):
        assert family.documentation and family.type == "gauge", family.name
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(found: dict[Any, float], name: str, **labels: str) -> float:
    return found[(name, tuple(sorted(labels.items())))]


def test_a_refresh_writes_its_series_and_keeps_the_other_corpora(
    tmp_path: Path, warehouse_path: Path
) -> None:
    metrics = tmp_path / "metrics" / "receipts.prom"
    metrics.parent.mkdir()
    manifest = write_manifest(tmp_path, synthetic(3))
    assert refresh(manifest, warehouse_path, "--metrics-file", metrics).exit_code == 0
    write_manifest(tmp_path, synthetic(3, changed=100.0))
    assert refresh(manifest, warehouse_path, "--metrics-file", metrics).exit_code == 0
    other = write_manifest(
        tmp_path, synthetic(1).replace('"s"', '"t"').replace('"a"', '"b"'), "t.toml"
    )
    result = cli("ingest", other, "--warehouse", warehouse_path, "--metrics-file", metrics)
    assert result.exit_code == 0, result.output

    found = samples(metrics)
    run = {"corpus": "s", "command": "refresh"}
    assert value(found, "receipts_last_run_success", **run) == 1
    assert value(found, "receipts_last_run_duration_seconds", **run) > 0
    stamp = value(found, "receipts_last_run_timestamp_seconds", **run)
    assert abs(stamp - os.path.getmtime(manifest)) < 600
    s = {"corpus": "s", "source": "synthetic"}
    assert value(found, "receipts_last_run_documents", **s, outcome="changed") == 3
    assert value(found, "receipts_last_run_documents", **s, outcome="new") == 0
    assert value(found, "receipts_source_last_run_success", **s) == 1
    assert value(found, "receipts_last_run_drift_documents", corpus="s") == 3
    assert (
        value(
            found,
            "receipts_last_push_mutations",
            corpus="s",
            target=f"ndjson:{tmp_path / 's.ndjson'}",
        )
        == 3
    )
    assert value(found, "receipts_last_run_retries", corpus="s") == 0
    # the second corpus, from an ingest, beside the first: one series each, not two
    t = {"corpus": "t", "source": "synthetic"}
    assert value(found, "receipts_last_run_documents", **t, outcome="new") == 1
    assert value(found, "receipts_last_run_success", corpus="t", command="ingest") == 1
    assert len([k for k in found if k[0] == "receipts_last_run_success"]) == 2
    assert os.listdir(metrics.parent) == ["receipts.prom"]  # no temporary file left


def test_a_failed_run_is_status_0_and_claims_are_counted_by_status(
    tmp_path: Path, warehouse_path: Path, fake_forem: Any
) -> None:
    metrics = tmp_path / "receipts.prom"
    metrics.write_text("# an old file, rewritten\n")
    manifest = write_manifest(tmp_path, synthetic(1) + "[[forem]]\nid = 404404\n")
    assert refresh(manifest, warehouse_path, "--metrics-file", metrics).exit_code == 1
    found = samples(metrics)
    assert value(found, "receipts_last_run_success", corpus="s", command="refresh") == 0
    assert value(found, "receipts_source_last_run_success", corpus="s", source="forem") == 0
    assert value(found, "receipts_source_last_run_success", corpus="s", source="synthetic") == 1
    assert (
        value(found, "receipts_last_run_documents", corpus="s", source="forem", outcome="failed")
        == 1
    )


def test_verify_claims_writes_claims_by_status(tmp_path: Path, warehouse_path: Path) -> None:
    manifest = write_manifest(tmp_path, synthetic(1))
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0
    rows = [
        {"claim_id": "c1", "doc_id": "synthetic/record/a-0", "quote": "zzz-absent", "revision": 1},
        {"claim_id": "c2", "doc_id": "synthetic/record/nope", "quote": "x", "revision": 1},
    ]
    claims = tmp_path / "claims.ndjson"
    claims.write_text("".join(json.dumps(row) + "\n" for row in rows))
    metrics = tmp_path / "receipts.prom"
    result = cli(
        "verify-claims", "--file", claims, "--warehouse", warehouse_path, "--metrics-file", metrics
    )
    assert result.exit_code == 0, result.output
    found = samples(metrics)
    claims_of = {k[1]: v for k, v in found.items() if k[0] == "receipts_claims"}
    assert sum(claims_of.values()) == 2
    assert value(found, "receipts_claims", corpus="none", status="holds") == 0
    assert value(found, "receipts_last_run_success", corpus="none", command="verify-claims") == 1


def test_retries_are_counted(tmp_path: Path, warehouse_path: Path, fake_forem: Any) -> None:
    """Two answers 429 (Retry-After 0), then the fake answers: two retries of the run."""
    article = fake_forem.add_article("ana", "on-labels-2gc3", "On labels", "One label.")
    fake_forem.add_comment(article, "Same here.", "bo")
    text = '[corpus]\nname = "s"\nnamespace = "s"\n[[forem]]\n'
    manifest = write_manifest(tmp_path, text + f"id = {article}\nreads_per_second = 1000\n")
    fake_forem.throttle(2, retry_after="0")
    metrics = tmp_path / "receipts.prom"
    result = cli("ingest", manifest, "--warehouse", warehouse_path, "--metrics-file", metrics)
    assert result.exit_code == 0, result.output
    assert "retry 2/" in result.stderr
    assert value(samples(metrics), "receipts_last_run_retries", corpus="s") == 2
