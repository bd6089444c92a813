"""Claim rows a claims file may hold, read by ``receipts verify-claims``: a revision past any
a warehouse holds, a byte order mark, a CSV field past the csv module's limit, a line nested
too deeply. Each bad row is reported by its line; the others are checked and recorded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests import corpus_fixture as fixture
from tests.conftest import cli

STALLED_DOC = "nhtsa/complaint/11561421"
HOLDS = {"doc_id": STALLED_DOC, "quote": "the vehicle stalled", "revision": 1}


@pytest.fixture
def warehouse(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    copy = tmp_path / "claims.duckdb"
    shutil.copyfile(fixture.shared(tmp_path_factory), copy)
    return str(copy)


def verify(path: Path, warehouse: str) -> tuple[int, dict[str, Any]]:
    result = cli("verify-claims", "--file", path, "--warehouse", warehouse, "--json")
    return result.exit_code, json.loads(result.stdout)


def history(warehouse: str, claim_id: str) -> list[dict[str, Any]]:
    result = cli("claims", "history", claim_id, "--warehouse", warehouse, "--json")
    assert result.exit_code == 0, result.output
    checks: list[dict[str, Any]] = json.loads(result.stdout)["checks"]
    return checks


@pytest.mark.parametrize(
    "revision",
    [
        2**63,  # past 64 bits: an OverflowError, once
        99999999999999999999999999999999999999999,
        2**31,  # past the warehouse's 32-bit revision numbers
        1e300,  # a JSON number that is a whole float
        "12345678901234567890",
    ],
)
def test_a_revision_past_any_warehouse_is_a_bad_row_and_the_rest_are_checked(
    tmp_path: Path, warehouse: str, revision: object
) -> None:
    path = tmp_path / "c.ndjson"
    rows = [
        {"claim_id": "a", **HOLDS},
        {"claim_id": "huge", **HOLDS, "revision": revision},
        {"claim_id": "b", **HOLDS, "quote": "without warning"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, report = verify(path, warehouse)
    assert code == 1  # some row could not be read
    assert [c["claim_id"] for c in report["claims"]] == ["a", "b"]
    assert [(b["origin"], b["claim_id"]) for b in report["bad_rows"]] == [("line 2", "huge")]
    assert "past any revision a warehouse holds" in report["bad_rows"][0]["problem"]
    assert report["recorded"] and [c["status"] for c in history(warehouse, "b")] == ["holds"]


def test_the_largest_revision_a_warehouse_holds_is_checked(tmp_path: Path, warehouse: str) -> None:
    path = tmp_path / "c.ndjson"
    path.write_text(json.dumps({"claim_id": "a", **HOLDS, "revision": 2**31 - 1}) + "\n")
    code, report = verify(path, warehouse)
    assert code == 0 and report["bad_rows"] == []
    assert report["claims"][0]["status"] == "unknown"  # no such revision, said as such


def verify_csv(directory: Path, warehouse: str, *rows: str) -> dict[str, Any]:
    """Check a CSV claims file of these rows (after the header); one of them is bad."""
    path = directory / "c.csv"
    header = "claim_id,doc_id,quote,revision\n"
    path.write_text(header + "".join(row + "\n" for row in rows), encoding="utf-8")
    code, report = verify(path, warehouse)
    assert code == 1, report
    return report


def test_a_revision_in_other_digits_is_a_bad_row(tmp_path: Path, warehouse: str) -> None:
    report = verify_csv(
        tmp_path,
        warehouse,
        f"arabic,{STALLED_DOC},the vehicle stalled,١",
        f"ok,{STALLED_DOC},the vehicle stalled,0001",
    )
    assert [b["claim_id"] for b in report["bad_rows"]] == ["arabic"]
    assert [(c["claim_id"], c["cited_revision"]) for c in report["claims"]] == [("ok", 1)]


@pytest.mark.parametrize("name", ["c.ndjson", "c.csv"])
def test_a_byte_order_mark_keeps_the_first_claim(tmp_path: Path, warehouse: str, name: str) -> None:
    path = tmp_path / name
    if name.endswith(".csv"):
        text = f"claim_id,doc_id,quote,revision\nfirst,{STALLED_DOC},the vehicle stalled,1\n"
    else:
        text = json.dumps({"claim_id": "first", **HOLDS}) + "\n"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    code, report = verify(path, warehouse)
    assert code == 0, report
    assert report["bad_rows"] == []
    assert [(c["claim_id"], c["status"]) for c in report["claims"]] == [("first", "holds")]


def test_a_csv_field_past_the_csv_limit_is_a_bad_row(tmp_path: Path, warehouse: str) -> None:
    report = verify_csv(
        tmp_path,
        warehouse,
        f'long,{STALLED_DOC},"{"word " * 40_000}",1',
        f"after,{STALLED_DOC},the vehicle stalled,1",
    )
    assert [b["origin"] for b in report["bad_rows"]] == ["line 2"]
    assert "field larger than field limit" in report["bad_rows"][0]["problem"]
    assert [(c["claim_id"], c["status"]) for c in report["claims"]] == [("after", "holds")]


def test_a_line_nested_too_deeply_is_a_bad_row(tmp_path: Path, warehouse: str) -> None:
    path = tmp_path / "c.ndjson"
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text(deep + "\n" + json.dumps({"claim_id": "a", **HOLDS}) + "\n")
    code, report = verify(path, warehouse)
    assert code == 1
    assert [b["origin"] for b in report["bad_rows"]] == ["line 1"]
    assert [c["claim_id"] for c in report["claims"]] == ["a"]


def test_no_claims_to_check_says_what_is_missing(warehouse: str, tmp_path: Path) -> None:
    result = cli("verify-claims", "--warehouse", warehouse)
    assert result.exit_code == 2
    assert "no claims to check: give a MANIFEST with a [claims] table, or --file" in result.stderr
    both = cli("verify-claims", tmp_path / "m.toml", "--file", tmp_path / "c.ndjson")
    assert both.exit_code == 2 and "not both" in both.stderr
