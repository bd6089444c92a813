"""Control, invisible and direction characters (an escape sequence, a right-to-left
override, a zero-width space, a line feed) in ids and claims are written out visibly by
every text output (the claims report in each format, ``claims history``, ``verify-claims
--json``, ``ls``), as the listings write them; a manifest refuses them, naming the entry
and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import corpus_fixture as fixture
from tests.conftest import cli
from warehouse.records import Listing
from warehouse.store import Warehouse

# an OSC sequence (click strips only CSI ones when not on a terminal), a right-to-left
# override, a zero-width space, a left-to-right isolate, a line feed, a tag character
HIDDEN = "\x1b]0;t\x07\u202e\u200b\u2066\nz\U000e0041"
RAW = ("\x1b", "\x07", "\u202e", "\u200b", "\u2066", "\U000e0041")
ID_CODE = f"e5c{HIDDEN}"
DOC_ID = f"forem/comment/{ID_CODE}"
CLAIM_ID = f"claim{HIDDEN}"


@pytest.fixture
def warehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "w.duckdb"
    listing = Listing(fixture.THREAD, [fixture.comment(ID_CODE, "<p>Looks fine</p>", "eve")])
    with Warehouse.open(str(path)) as wh:
        fixture.run_at(wh, monkeypatch, fixture.RUN_TIMES[1], fixture.CORPUS, [listing])
    return path


@pytest.fixture
def claims(tmp_path: Path) -> Path:
    path = tmp_path / f"claims{HIDDEN.replace(chr(10), '')}.ndjson"
    rows = [
        {"claim_id": CLAIM_ID, "doc_id": DOC_ID, "quote": "no such words", "revision": 1},
        {"claim_id": CLAIM_ID, "doc_id": DOC_ID, "quote": "again", "revision": 1},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _shows_nothing_raw(output: str) -> None:
    found = [hex(ord(c)) for c in RAW if c in output]
    assert not found, f"written raw: {found}"
    # the id's line feed is written out: no line begins with what followed it
    assert not any(line.startswith("z") for line in output.splitlines())


@pytest.mark.parametrize("fmt", ["text", "md", "html"])
def test_the_claims_report_writes_them_out(warehouse: Path, claims: Path, fmt: str) -> None:
    result = cli("verify-claims", "--file", claims, "--warehouse", warehouse, "--format", fmt)
    assert result.exit_code == 1, result.output  # the repeated claim is a bad row
    _shows_nothing_raw(result.stdout)
    assert "\\u202e\\u200b\\u2066\\nz" in result.stdout


def test_verify_claims_json_escapes_them_and_keeps_the_values(
    warehouse: Path, claims: Path
) -> None:
    result = cli("verify-claims", "--file", claims, "--warehouse", warehouse, "--json")
    _shows_nothing_raw(result.stdout)
    report = json.loads(result.stdout)
    assert [c["claim_id"] for c in report["claims"]] == [CLAIM_ID]
    assert report["claims"][0]["doc_id"] == DOC_ID
    assert report["bad_rows"][0]["claim_id"] == CLAIM_ID


def test_claims_history_writes_them_out(warehouse: Path, claims: Path) -> None:
    cli("verify-claims", "--file", claims, "--warehouse", warehouse)
    result = cli("claims", "history", CLAIM_ID, "--warehouse", warehouse)
    assert result.exit_code == 0, result.output
    _shows_nothing_raw(result.stdout)
    assert result.stdout.splitlines()[0].startswith("claim\\x1b]0;t\\x07\\u202e\\u200b")
    as_json = cli("claims", "history", CLAIM_ID, "--warehouse", warehouse, "--json")
    _shows_nothing_raw(as_json.stdout)
    assert json.loads(as_json.stdout)["claim_id"] == CLAIM_ID


@pytest.mark.parametrize("fmt", [None, "--json", "--nl"])
def test_ls_writes_doc_ids_out(warehouse: Path, fmt: str | None) -> None:
    result = cli("ls", "--warehouse", warehouse, *([fmt] if fmt else []))
    assert result.exit_code == 0, result.output
    _shows_nothing_raw(result.stdout)
    if fmt == "--json":
        assert [row["doc_id"] for row in json.loads(result.stdout)] == [DOC_ID]
    elif fmt == "--nl":
        assert json.loads(result.stdout)["doc_id"] == DOC_ID


MANIFEST = """
[corpus]
name = "vehicles"
namespace = "vehicles"

[[nhtsa]]
make = "{make}"
model = "{model}"
years = [2020, 2021]
license = "{license}"
"""


@pytest.mark.parametrize(
    ("make", "model", "license", "expected"),
    [
        (
            "HON\\u202eDA",
            "CR-V",
            "CC-BY",
            "[[nhtsa]] entry 1 (HON\\u202eDA), field 'make': contains the invisible or "
            "direction character U+202E RIGHT-TO-LEFT OVERRIDE",
        ),
        (
            "HONDA",
            "CR\\u200b-V",
            "CC-BY",
            "[[nhtsa]] entry 1 (HONDA), field 'model': contains the invisible or direction "
            "character U+200B ZERO WIDTH SPACE",
        ),
        (
            "HONDA",
            "CR-V",
            "CC\\u2066-BY",
            "[[nhtsa]] entry 1 (HONDA), field 'license': contains the invisible or direction "
            "character U+2066 LEFT-TO-RIGHT ISOLATE",
        ),
    ],
)
def test_a_manifest_refuses_them_naming_the_entry_and_field(
    tmp_path: Path, make: str, model: str, license: str, expected: str
) -> None:
    path = tmp_path / "vehicles.toml"
    path.write_text(MANIFEST.format(make=make, model=model, license=license), encoding="utf-8")
    result = cli("manifest", "check", path)
    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    _shows_nothing_raw(result.stderr)


def test_manifest_check_writes_out_a_file_name(tmp_path: Path) -> None:
    path = tmp_path / "vehicles\u202e.toml"
    path.write_text(MANIFEST.format(make="HONDA", model="CR-V", license="CC-BY"), encoding="utf-8")
    result = cli("manifest", "check", path)
    assert result.exit_code == 0, result.output
    _shows_nothing_raw(result.stdout)
    assert "vehicles\\u202e.toml: ok" in result.stdout
