"""A claim's proof bundle downloaded from ``/claims/<id>/bundle.json``: on a warehouse whose log
is signed, the same bytes ``receipts verify-claims --bundles`` writes, and a bundle the
offline verifier accepts with the log's key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from pipelines.proofs.make import bundle_name
from pipelines.proofs.verify_receipt import verify
from pipelines.serve.app import create_app
from tests.conftest import cli
from tests.proofs.conftest import COMPLAINT, make_signed_warehouse

CLAIM = {
    "claim_id": "dealer/could-not",
    "doc_id": COMPLAINT,
    "quote": "The dealer could not reproduce the fault.",
    "revision": 1,
}


def test_a_holding_claim_downloads_the_bundle_verify_claims_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    signed = make_signed_warehouse(tmp_path)
    claims = tmp_path / "claims.ndjson"
    claims.write_text(json.dumps(CLAIM) + "\n")
    written = tmp_path / "bundles"
    args = ("verify-claims", "--file", claims, "--warehouse", signed.warehouse)
    result = cli(*args, "--bundles", written, env=signed.env)
    assert result.exit_code == 0, result.output
    monkeypatch.setenv("RECEIPTS_LOG_KEY", str(signed.key_file))
    client = TestClient(create_app(signed.warehouse))
    board = client.get("/claims").text
    assert 'href="/claims/dealer%2Fcould-not/bundle.json"' in board
    response = client.get("/claims/dealer%2Fcould-not/bundle.json")
    assert response.status_code == 200, response.text
    assert "attachment" in response.headers["content-disposition"]
    assert response.content == (written / bundle_name(CLAIM["claim_id"])).read_bytes()
    report = verify(response.content, trusted_key=signed.verifier)
    assert report.ok, report.lines()
    bundle = response.json()
    assert bundle["claim"]["id"] == CLAIM["claim_id"] and bundle["claim"]["status"] == "holds"
    assert bundle["quote"]["text"] == CLAIM["quote"]
