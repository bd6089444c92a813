"""The reference path of a flat file's rows, which only the tests call: the line-at-a-time
reading, a dict per row and a document per identity (the path the backfill took before it
read files in bulk). The bulk path must store byte for byte what this builds.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from sources.nhtsa.flatfile.layouts import Layout, is_header
from sources.nhtsa.flatfile.reading import ENCODING, LineSource
from sources.nhtsa.flatfile.rows import VehicleFilter
from sources.nhtsa.parse import flat_date, model_year, record_key
from warehouse.bulk.spec import Malformed
from warehouse.canonical import canonical_json, content_hash
from warehouse.errors import NhtsaParseError
from warehouse.ids import doc_id
from warehouse.records import Provenance, Record


def read_lines(source: LineSource) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` for every non-empty line of ``source``, decoded from
    ISO-8859-1 (its ``bytes_read`` counts the bytes read)."""
    source.bytes_read = 0
    with _open(source) as raw:
        for number, line in enumerate(raw, 1):
            source.bytes_read += len(line)
            text = line.rstrip(b"\r\n")
            if text:
                yield number, text.decode(ENCODING)


def _open(source: LineSource) -> IO[bytes]:
    if source.member is None:
        return source.path.open("rb", buffering=1 << 20)
    archive = zipfile.ZipFile(source.path)
    try:
        return _ClosingReader(archive.open(source.member), archive)
    except Exception:
        archive.close()
        raise


class _ClosingReader(io.BufferedReader):
    """A buffered reader over a zip member that also closes its archive."""

    def __init__(self, raw: IO[bytes], archive: zipfile.ZipFile) -> None:
        super().__init__(raw, buffer_size=1 << 20)  # type: ignore[arg-type]
        self._archive = archive

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._archive.close()


@dataclass(frozen=True, slots=True)
class FlatRow:
    line: int
    key: str
    values: dict[str, str]


def _first_field(values: dict[str, str], names: Sequence[str]) -> str:
    for name in names:
        if name in values:
            return values[name]
    return ""


def parse_line(
    layout: Layout, number: int, text: str, *, checked: bool = False
) -> FlatRow | Malformed:
    """One line into a row of ``layout``, or the reason it is malformed. ``checked`` skips
    the date and year checks of a line that already passed them."""
    parts = text.split("\t")
    names = layout.fields_by_count.get(len(parts))
    if names is None:
        return Malformed(
            number,
            f"expected {layout.expected_counts()} tab-separated fields, found {len(parts)}",
        )
    values = dict(zip(names, parts, strict=True))
    try:
        key = record_key(layout.kind, values)
        if not checked:
            for name in layout.date_fields.intersection(values):
                flat_date(values[name])
            model_year(_first_field(values, layout.year_fields))
    except NhtsaParseError as exc:
        return Malformed(number, str(exc))
    return FlatRow(number, key, values)


def row_matches(layout: Layout, row: FlatRow, wanted: VehicleFilter) -> bool:
    if wanted.make and _first_field(row.values, layout.make_fields).strip().upper() != wanted.make:
        return False
    if (
        wanted.model
        and _first_field(row.values, layout.model_fields).strip().upper() != wanted.model
    ):
        return False
    if wanted.years:
        year = model_year(_first_field(row.values, layout.year_fields))
        return year is not None and wanted.years[0] <= year <= wanted.years[1]
    return True


def flat_body(layout: Layout, rows: Sequence[dict[str, str]]) -> bytes:
    """The stored bytes of one document: its rows verbatim (file order) and the model years
    they name (``9999`` and blanks left out)."""
    years = sorted(
        {y for r in rows if (y := model_year(_first_field(r, layout.year_fields))) is not None}
    )
    return canonical_json({"rows": list(rows), "modelYears": years})


def flat_record(
    layout: Layout,
    key: str,
    rows: Sequence[dict[str, str]],
    *,
    provenance: Provenance,
    checkpoint: str | None = None,
    attributes: dict[str, object] | None = None,
) -> Record:
    """One document of a flat file; its provenance names the layout its rows were read with."""
    return Record(
        doc_id=doc_id("nhtsa", layout.doc_kind, key),
        kind=layout.doc_kind,
        body=flat_body(layout, rows),
        provenance=replace(provenance, source_format=layout.record_format(rows)),
        attributes=attributes,
        checkpoint=checkpoint,
    )


def reference_documents(path: Path, layout: Layout) -> dict[str, tuple[str, str]]:
    """doc_id → (content hash, source format), by the reference path: :func:`parse_line` on
    each line, rows grouped by identity in file order, then :func:`flat_record`."""
    grouped: dict[str, list[dict[str, str]]] = {}
    for number, text in read_lines(LineSource(path)):
        if number == 1 and is_header(layout, text):
            continue
        row = parse_line(layout, number, text)
        if isinstance(row, FlatRow):
            grouped.setdefault(row.key, []).append(row.values)
    out = {}
    for key, rows in grouped.items():
        record = flat_record(layout, key, rows, provenance=Provenance())
        out[record.doc_id] = (content_hash(record.body), str(record.provenance.source_format))
    return out
