"""One way to write a moment and a span everywhere: text to the second in UTC with ``Z``,
machine formats at full precision with ``Z`` (``claims history``, the CSV export, the
listings), durations and ETAs as ``42s`` / ``1m05s`` / ``2h03m``; and points in time given
as a time ago (``--since "2 days ago"``) wherever a point is taken."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from pipelines.progress import eta
from tests import corpus_fixture as fixture
from tests.conftest import cli
from warehouse.timestamps import duration, to_second, utc_iso

TEXT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
FULL = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


@pytest.fixture
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    return fixture.shared(tmp_path_factory)


def test_the_one_helper() -> None:
    moment = datetime.fromisoformat("2026-11-03T08:00:00.512031+02:00")
    assert to_second(moment) == "2026-11-03T06:00:00Z"
    assert utc_iso(moment) == "2026-11-03T06:00:00.512031Z"
    assert to_second("2026-11-03T06:00:00Z") == "2026-11-03T06:00:00Z"
    assert [duration(s) for s in (0.4, 42, 65, 7380)] == ["0s", "42s", "1m05s", "2h03m"]
    assert eta(50, 100, 65) == "1m05s" and eta(1, 100, 3600) == "99h00m"


def test_claims_history_writes_moments_as_the_listings_do(warehouse: str, tmp_path: Path) -> None:
    copy = tmp_path / "w.duckdb"
    shutil.copy(warehouse, copy)
    claims = tmp_path / "claims.ndjson"
    claim = {
        "claim_id": "c1",
        "doc_id": "nhtsa/complaint/11561420",
        "quote": "blank",
        "revision": 1,
    }
    claims.write_text(json.dumps(claim) + "\n", encoding="utf-8")
    assert cli("verify-claims", "--file", claims, "--warehouse", copy).exit_code == 0
    text = cli("claims", "history", "c1", "--warehouse", copy).stdout
    found = re.findall(r"\d{4}-\d\d-\d\dT\S+", text)
    assert found and all(TEXT.fullmatch(moment) for moment in found), text
    checks = json.loads(cli("claims", "history", "c1", "--warehouse", copy, "--json").stdout)
    assert all(FULL.fullmatch(c["recorded_at"]) for c in checks["checks"])


def test_the_csv_export_writes_moments_as_the_listings_do(warehouse: str, tmp_path: Path) -> None:
    assert (
        cli("export", "--warehouse", warehouse, "--format", "csv", "--out", tmp_path).exit_code == 0
    )
    with (tmp_path / "revisions.csv").open(encoding="utf-8") as handle:
        exported = {(r["doc_id"], r["revision"]): r for r in csv.DictReader(handle)}
    listed = csv.DictReader(io.StringIO(cli("ls", "--warehouse", warehouse, "--csv").stdout))
    for row in listed:
        moment = exported[(row["doc_id"], row["revision"])]["valid_from"]
        assert FULL.fullmatch(moment) and FULL.fullmatch(row["valid_from"])
        assert utc_iso(moment) == row["valid_from"]  # the same instant, the same form


# -- points in time given as a time ago ------------------------------------------------------
# The fixture's clock reads 2026-11-03T07:00:00Z (fixture.REPORT_TIME).
@pytest.mark.parametrize(
    ("since", "at"),
    [
        ("2 days ago", "2026-11-01T07:00:00Z"),
        ("36 hours ago", "2026-11-01T19:00:00Z"),
        ("yesterday", "2026-11-02T00:00:00Z"),
        ("2026-11-02", "2026-11-02T00:00:00Z"),
    ],
)
def test_drift_since_a_time_ago(
    warehouse: str, monkeypatch: pytest.MonkeyPatch, since: str, at: str
) -> None:
    monkeypatch.setenv("RECEIPTS_NOW", fixture.REPORT_TIME)
    result = cli("drift", "--warehouse", warehouse, "--since", since, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["since"]["at"] == at


def test_every_point_option_takes_a_time_ago(
    warehouse: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RECEIPTS_NOW", fixture.REPORT_TIME)
    changed = cli("ls", "--warehouse", warehouse, "--changed-since", "1 day ago", "--nl")
    assert changed.exit_code == 0, changed.output
    ids = {json.loads(line)["doc_id"] for line in changed.stdout.splitlines()}
    assert "nhtsa/complaint/11561423" in ids and "nhtsa/complaint/11561420" not in ids
    then = cli("as-of", "2 days ago", "--warehouse", warehouse, "--json")
    assert json.loads(then.stdout)["point"]["at"] == "2026-11-01T07:00:00Z"
    exported = cli("export", "--warehouse", warehouse, "--out", tmp_path, "--as-of", "today")
    assert exported.exit_code == 0, exported.output
    bad = cli("drift", "--warehouse", warehouse, "--since", "last tuesday")
    assert bad.exit_code == 2 and "2 days ago" in bad.stderr
