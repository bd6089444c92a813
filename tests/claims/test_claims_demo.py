"""The claims example of docs/claims.md, against a demo warehouse; and the claims benchmark on tiny
inputs (no timing is asserted)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench import claims as bench_claims
from bench.run import markdown
from demo.run import demo
from tests.conftest import REPO, cli

CLAIMS = REPO / "demo" / "claims.ndjson"


@pytest.fixture(scope="module")
def demo_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("claims-demo")
    result = CliRunner().invoke(
        demo, ["--warehouse", str(root / "receipts.duckdb"), "--out", str(root / "out")]
    )
    assert result.exit_code == 0, result.output
    return root / "receipts.duckdb"


def test_the_demo_claims_as_the_docs_show_them(
    demo_warehouse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    warehouse = tmp_path / "w.duckdb"
    shutil.copyfile(demo_warehouse, warehouse)
    result = cli("verify-claims", "--file", CLAIMS, "--warehouse", warehouse, "--json")
    assert result.exit_code == 0
    statuses = {c["claim_id"]: c["status"] for c in json.loads(result.stdout)["claims"]}
    assert statuses == {
        "remedy-day1": "stale",
        "remedy-miscited": "misattributed",
        "remedy-now": "holds",
        "cmbs": "holds",
        "retries": "stale",
        "licence": "holds",
        "licence-invented": "missing",
        "no-such-recall": "unknown",
    }
    text = cli("verify-claims", "--file", "demo/claims.ndjson", "--warehouse", warehouse).stdout
    page = (REPO / "docs" / "claims.md").read_text(encoding="utf-8")
    for line in text.splitlines()[:6]:
        assert line in page, line
    assert (
        cli("verify-claims", "--file", CLAIMS, "--warehouse", warehouse, "--fail-on-drift")
    ).exit_code == 3


def test_the_claims_benchmark_runs_on_tiny_inputs() -> None:
    result = bench_claims.run(revisions=400, claims=50)
    assert result["revisions"] == 400 and result["claims"] == 50
    assert sum(result["counts"].values()) == 50
    assert result["counts"]["unknown"] == result["counts"]["missing"] == 0
    assert result["counts"] == result["first_counts"]
    table = markdown({"results": {"claims": result}})
    assert "claims: steady check (50 claims, 400 revisions" in table
