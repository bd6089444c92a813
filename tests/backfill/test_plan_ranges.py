"""The plan and its lines are put in line order a range of lines at a time
(``plan_sql.ORDERED_LINES``): documents whose lines straddle a range's end are planned and
built exactly as in one range."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.nhtsa_backfill import generate
from pipelines.backfill.request import BackfillRequest
from pipelines.backfill.run import run_backfill
from warehouse import history
from warehouse.bulk import plan_sql
from warehouse.store import Warehouse


def _revisions(location: Path) -> list[tuple[str, int, str | None]]:
    with Warehouse.open(str(location), read_only=True) as wh:
        return sorted((r.doc_id, r.revision, r.content_hash) for r in history.revisions(wh))


def test_ranges_of_lines_plan_what_one_range_plans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = generate(tmp_path / "GEN.zip", 3_000)
    request = BackfillRequest(path=path, kind="complaints", batch_size=500)
    whole, ranged = tmp_path / "whole.duckdb", tmp_path / "ranged.duckdb"
    with Warehouse.open(str(whole)) as wh:
        one = run_backfill(wh, request)
    monkeypatch.setattr(plan_sql, "ORDERED_LINES", 233)  # 13 ranges, most ending mid-document
    with Warehouse.open(str(ranged)) as wh:
        many = run_backfill(wh, request)
        again = run_backfill(wh, request)
    assert many.documents.as_dict() == one.documents.as_dict()
    assert many.built == one.built == one.documents.new > 2_000
    assert _revisions(ranged) == _revisions(whole)
    assert again.built == 0 and again.documents.unchanged == one.documents.new
