"""OpenLineage run events, sent by the official client (openlineage-python) to a real HTTP
endpoint on 127.0.0.1 and validated against the OpenLineage JSON schema.

The client's wheel ships no schema file (its facet classes are generated from it), nor does
any other PyPI package of the project (openlineage-integration-common ships only its own
facets' schemas), so ``openlineage_spec.json`` holds the constraints of the core spec as
published in the OpenLineage repository (spec/OpenLineage.json at commit 0254c4d2fe40,
draft 2020-12: RunEvent, Run, Job, Input/OutputDataset and their facets, BaseFacet's
``_producer`` and ``_schemaURL``), descriptions and examples left out."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import write_manifest
from tests.observe.receivers import receiver
from tests.observe.test_notify import refresh, synthetic

SPEC = json.loads((Path(__file__).parent / "openlineage_spec.json").read_text())


def validate(event: dict) -> None:  # type: ignore[type-arg]
    jsonschema.validate(event, SPEC, format_checker=jsonschema.FormatChecker())


def test_a_refresh_sends_start_then_complete_with_counts_and_the_receipt(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = write_manifest(tmp_path, synthetic(3))
    with receiver() as endpoint:
        monkeypatch.setenv("OPENLINEAGE_URL", f"http://127.0.0.1:{endpoint.port}")
        result = refresh(manifest, warehouse_path, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["observer_warnings"] == []
    assert [p["path"] for p in endpoint.posts] == ["/api/v1/lineage"] * 2
    start, complete = endpoint.bodies
    for event in (start, complete):
        validate(event)
    assert (start["eventType"], complete["eventType"]) == ("START", "COMPLETE")
    assert start["run"]["runId"] == complete["run"]["runId"]
    uuid.UUID(start["run"]["runId"])
    assert complete["job"] == {"namespace": "receipts", "name": "refresh.s", "facets": {}}
    assert start["eventTime"] <= complete["eventTime"]
    assert [i["name"] for i in complete["inputs"]] == ["synthetic"]
    outputs = {(o["namespace"], o["name"]): o for o in complete["outputs"]}
    revisions = outputs[("receipts-warehouse", "revisions")]
    assert revisions["outputFacets"]["outputStatistics"]["rowCount"] == 3
    pushed = outputs[(f"ndjson:{tmp_path / 's.ndjson'}", "s")]
    assert pushed["outputFacets"]["outputStatistics"]["rowCount"] == 3
    facets = complete["run"]["facets"]
    assert facets["receipts_counts"]["counts"]["synthetic"]["new"] == 3
    assert facets["receipts_push"]["mutations"] == 3
    assert facets["receipts_push"]["unrelatedBefore"] == facets["receipts_push"]["unrelatedAfter"]
    # The schema is not a formality: an event without its job is refused.
    with pytest.raises(jsonschema.ValidationError):
        validate({k: v for k, v in complete.items() if k != "job"})


def test_a_failed_run_sends_fail_with_the_error_and_the_nhtsa_endpoint(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch, fake_forem: object
) -> None:
    manifest = write_manifest(tmp_path, synthetic(1) + "[[forem]]\nid = 404404\n")
    with receiver() as endpoint:
        monkeypatch.setenv("OPENLINEAGE_URL", f"http://127.0.0.1:{endpoint.port}")
        result = refresh(manifest, warehouse_path)
    assert result.exit_code == 1
    [_, fail] = endpoint.bodies
    validate(fail)
    assert fail["eventType"] == "FAIL"
    assert "forem" in fail["run"]["facets"]["errorMessage"]["message"]
    namespaces = {i["namespace"] for i in fail["inputs"]}
    assert "https://dev.to" in namespaces


def test_an_endpoint_that_answers_500_is_a_warning_and_no_complete_follows(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client's own configuration (an ``openlineage.yml`` named by OPENLINEAGE_CONFIG)
    turns its retries off, so the test need not wait for them."""
    manifest = write_manifest(tmp_path, synthetic(1))
    with receiver(status=500) as endpoint:
        config = tmp_path / "openlineage.yml"
        config.write_text(
            "transport:\n  type: http\n"
            f"  url: http://user:s3cretpass@127.0.0.1:{endpoint.port}\n"
            "  retry:\n    total: 0\n"
        )
        monkeypatch.setenv("OPENLINEAGE_CONFIG", str(config))
        monkeypatch.setenv("OPENLINEAGE_URL", f"http://user:s3cretpass@127.0.0.1:{endpoint.port}")
        result = refresh(manifest, warehouse_path, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["run"]["status"] == "ok"
    [warning] = json.loads(result.stdout)["observer_warnings"]
    assert warning["entry"] == "lineage"
    assert warning["warning"].startswith("START event not sent: ")
    assert len(endpoint.posts) == 1
    assert "s3cretpass" not in result.stdout + result.stderr
