"""Streaming readers for NHTSA's flat files: layouts, encoding, malformed rows, filters."""

from __future__ import annotations

import itertools
import zipfile
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakes.nhtsa import cmpl_row, write_zip
from sources.nhtsa.flatfile.layouts import (
    INV_FIELDS,
    LAYOUTS,
    RCL_FIELDS,
    TSBS_FIELDS_10,
    TSBS_FIELDS_14,
    is_header,
)
from sources.nhtsa.flatfile.lines import text_table
from sources.nhtsa.flatfile.reading import LineSource, read_blocks
from sources.nhtsa.flatfile.reading import _blocks as cut_blocks
from sources.nhtsa.flatfile.rows import VehicleFilter
from tests.backfill.reference import (
    FlatRow,
    Malformed,
    flat_record,
    parse_line,
    read_lines,
    row_matches,
)
from warehouse.errors import FlatFileError
from warehouse.records import Provenance

CMPL = LAYOUTS["complaints"]


def line(row: list[str]) -> str:
    return "\t".join(row)


def test_a_complaint_row_of_49_or_51_fields() -> None:
    row = parse_line(CMPL, 7, line(cmpl_row(11999001, 1)))
    assert isinstance(row, FlatRow)
    assert (row.line, row.key) == (7, "11999001")
    assert row.values["CDESCR"] == 'The "CMBS" braked hard on an empty road.'
    wide = parse_line(CMPL, 8, line([*cmpl_row(11999001, 2), "X", "Y"]))
    assert isinstance(wide, FlatRow)
    assert (wide.values["STATE_OF_INCIDENT"], wide.values["VEHICLE_OPERATOR"]) == ("X", "Y")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("only\tthree\tfields", "expected 20, 46, 47, 48, 49 or 51 tab-separated fields, found 3"),
        (line(cmpl_row(1, 1, FAILDATE="2021-05-12")), "'2021-05-12' is not a YYYYMMDD date"),
        (line(cmpl_row(1, 1, LDATE="20211301")), "'20211301' is not a valid YYYYMMDD date"),
        (line(cmpl_row(1, 1, ODINO="")), "complaint without an identity"),
        (line(cmpl_row(1, 1, ODINO="ODI-1")), "complaint identity 'ODI-1' is not a number"),
        (line(cmpl_row(1, 1, YEARTXT="20XX")), "'20XX' is not a model year"),
    ],
    ids=["field count", "iso date", "month 13", "no odi", "odi text", "year"],
)
def test_malformed_rows_say_why(text: str, reason: str) -> None:
    bad = parse_line(CMPL, 12, text)
    assert isinstance(bad, Malformed)
    assert bad.line == 12
    assert reason in bad.reason


def test_every_layout_reads_its_rows() -> None:
    recall = dict.fromkeys(RCL_FIELDS, "")
    recall.update(
        CAMPNO="21V999003",
        MAKETXT="HONDA",
        MODELTXT="CR-V",
        YEARTXT="2021",
        RCDATE="20220201",
        DESC_DEFECT="The CMBS may brake.",
    )
    inv = dict.fromkeys(INV_FIELDS, "")
    inv.update(
        {
            "NHTSA ACTION NUMBER": "EA24002",
            "MAKE": "HONDA",
            "YEAR": "9999",
            "ODATE": "20240313",
            "CDATE": "",
        }
    )
    tsb14 = dict.fromkeys(TSBS_FIELDS_14, "")
    tsb14.update(nhtsaID="11035781", tsbID="A26-091", nhtsaDate="20210302")
    tsb10 = dict.fromkeys(TSBS_FIELDS_10, "")
    tsb10.update(ID="10012345", BULNO="05-001", BULDTE="20050101")
    cases = [
        ("recalls", recall, "21V999003"),
        ("investigations", inv, "EA24002"),
        ("communications", tsb14, "11035781"),
        ("communications", tsb10, "10012345"),
    ]
    for kind, values, key in cases:
        row = parse_line(LAYOUTS[kind], 1, "\t".join(values.values()))
        assert isinstance(row, FlatRow), (kind, row)
        assert row.key == key


def test_the_vehicle_filter_and_9999() -> None:
    rows = {
        year: parse_line(CMPL, 1, line(cmpl_row(1, 1, YEARTXT=year)))
        for year in ("2016", "2017", "2022", "9999")
    }
    cr_v = VehicleFilter("honda", "cr-v", (2017, 2022))
    kept = [y for y, r in rows.items() if isinstance(r, FlatRow) and row_matches(CMPL, r, cr_v)]
    assert kept == ["2017", "2022"]
    any_year = VehicleFilter("HONDA")
    assert all(isinstance(r, FlatRow) and row_matches(CMPL, r, any_year) for r in rows.values())
    other = parse_line(CMPL, 1, line(cmpl_row(1, 1, MAKETXT="ACURA")))
    assert isinstance(other, FlatRow) and not row_matches(CMPL, other, cr_v)
    assert cr_v.describe() == "HONDA/CR-V/2017-2022"


def test_lines_stream_from_a_zip_in_iso_8859_1(tmp_path: Path) -> None:
    narrative = "Le système CMBS a freiné – sans raison"  # the dash is not ISO-8859-1
    rows = [cmpl_row(1, 1, CDESCR=narrative.replace("–", "-")), cmpl_row(2, 2)]
    path = write_zip(tmp_path / "FLAT_CMPL.zip", "FLAT_CMPL.txt", rows, eol="\r\n")
    source = LineSource(path)
    read = list(read_lines(source))
    assert [n for n, _ in read] == [1, 2]
    assert read[0][1].split("\t")[19] == "Le système CMBS a freiné - sans raison"
    assert not read[1][1].endswith("\r")
    assert source.bytes_read == source.total_bytes
    assert list(read_lines(source)) == read  # a second pass reads the same lines


def test_a_plain_text_file_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "FLAT_CMPL.txt"
    path.write_bytes(
        ("\t".join(cmpl_row(1, 1)) + "\n\n" + "\t".join(cmpl_row(2, 2)) + "\n").encode()
    )
    assert [n for n, _ in read_lines(LineSource(path))] == [1, 3]


@given(
    text=st.binary(max_size=60).map(lambda b: bytes(b"ab\n\r"[x % 4] for x in b)),
    cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=8),
    size=st.integers(min_value=1, max_value=25),
)
def test_blocks_cut_from_any_pieces_hold_every_line_once_numbered(
    text: bytes, cuts: list[int], size: int
) -> None:
    edges = sorted({0, len(text), *(c for c in cuts if c < len(text))})
    pieces = [text[a:b] for a, b in itertools.pairwise(edges)]
    blocks = list(cut_blocks(pieces, size))
    # The blocks are the file's lines, in order; the line end after the last is not kept.
    assert b"\n".join(block for block, _, _ in blocks) == text.removesuffix(b"\n")
    lines = text.split(b"\n")
    number = 1
    for block, spans, read in blocks:
        assert block.split(b"\n")[0] == lines[number - 1]
        assert 0 < read <= len(text)
        number += spans
    assert [read for _, _, read in blocks][-1:] == ([len(text)] if blocks else [])


def test_blocks_of_a_zip_number_their_lines_as_the_line_reader_does(tmp_path: Path) -> None:
    rows = [cmpl_row(i, i, CDESCR="freiné" * (i % 5)) for i in range(1, 400)]
    text = "".join(
        "\t".join(row) + ("\r\n" if i % 3 else "\n") + ("\n" if i % 7 == 0 else "")
        for i, row in enumerate(rows)
    )
    path = tmp_path / "FLAT_CMPL.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("FLAT_CMPL.txt", text.rstrip("\n").encode("iso-8859-1"))
    source = LineSource(path)
    expected = list(read_lines(source))
    read: list[tuple[int, str]] = []
    blocks = 0
    for start, data in read_blocks(source, 3_000):
        blocks += 1
        rows_read = text_table(start, data).to_pylist()
        read.extend((r["number"], r["text"]) for r in rows_read if r["text"])
    assert blocks > 20
    assert read == expected
    assert source.bytes_read == source.total_bytes


def test_members_of_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "two.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("CMPL.txt", "dictionary")
        archive.writestr("FLAT_CMPL.txt", "\t".join(cmpl_row(1, 1)))
    with pytest.raises(FlatFileError, match=r"holds several files .*name the data file"):
        LineSource(path)
    assert [n for n, _ in read_lines(LineSource(path, "FLAT_CMPL.txt"))] == [1]
    with pytest.raises(FlatFileError, match=r"has no member 'NOPE\.txt'"):
        LineSource(path, "NOPE.txt")
    with pytest.raises(FlatFileError, match="no such file"):
        LineSource(tmp_path / "missing.zip")


def test_a_header_line_is_recognised() -> None:
    assert is_header(CMPL, "CMPLID\tODINO\tMFR_NAME")
    assert not is_header(CMPL, line(cmpl_row(1, 1)))


def test_a_document_keeps_its_rows_verbatim_with_their_model_years() -> None:
    rows = [
        cmpl_row(11999001, 1, YEARTXT="2019"),
        cmpl_row(11999001, 2, YEARTXT="9999", COMPDESC="SERVICE BRAKES"),
        cmpl_row(11999001, 3, YEARTXT="2020"),
    ]
    parsed = [parse_line(CMPL, i, line(r)) for i, r in enumerate(rows, 1)]
    values = [p.values for p in parsed if isinstance(p, FlatRow)]
    record = flat_record(CMPL, "11999001", values, provenance=Provenance(source_format="x"))
    assert record.doc_id == "nhtsa/complaint/11999001"
    body = orjson.loads(record.body)
    assert body["modelYears"] == [2019, 2020]
    assert [r["CMPLID"] for r in body["rows"]] == ["1", "2", "3"]
    assert body["rows"][1]["COMPDESC"] == "SERVICE BRAKES"
