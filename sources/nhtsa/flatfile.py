"""Streaming readers for NHTSA's bulk flat files (reference §2.4–2.6).

The files are zipped, tab-delimited with no quote convention (narratives contain ``"``),
ISO-8859-1, one row per line, dates ``YYYYMMDD``. Each layout is recognised by its field
count; a row with another count, a malformed date or a missing identity is *malformed*:
it is reported with its line number and reason, never dropped silently, never fatal.

A document is every row of one identity (a complaint's ODI number appears once per
vehicle/component, a recall campaign once per make/model/year, ...). :func:`flat_record`
turns those rows into one record whose body keeps them verbatim.
"""

from __future__ import annotations

import hashlib
import io
import queue
import threading
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from sources.digits import is_ascii_digits
from sources.nhtsa.parse import _KEY_FIELDS as KEY_FIELDS
from sources.nhtsa.parse import DOC_KIND, PLAIN_KEYS, flat_date, model_year, record_key
from sources.nhtsa.zipped import member_pieces
from warehouse.canonical import CANONICAL_FORM_VERSION, canonical_json, right_sized
from warehouse.errors import FlatFileError, NhtsaParseError
from warehouse.flatbulk import FlatSpec, ShapeSpec
from warehouse.ids import doc_id
from warehouse.records import Provenance, Record
from warehouse.value_hashes import sha256_digests

ENCODING = "iso-8859-1"

CMPL_FIELDS_49 = (
    "CMPLID", "ODINO", "MFR_NAME", "MAKETXT", "MODELTXT", "YEARTXT", "CRASH", "FAILDATE",
    "FIRE", "INJURED", "DEATHS", "COMPDESC", "CITY", "STATE", "VIN", "DATEA", "LDATE", "MILES",
    "OCCURENCES", "CDESCR", "CMPL_TYPE", "POLICE_RPT_YN", "PURCH_DT", "ORIG_OWNER_YN",
    "ANTI_BRAKES_YN", "CRUISE_CONT_YN", "NUM_CYLS", "DRIVE_TRAIN", "FUEL_SYS", "FUEL_TYPE",
    "TRANS_TYPE", "VEH_SPEED", "DOT", "TIRE_SIZE", "LOC_OF_TIRE", "TIRE_FAIL_TYPE",
    "ORIG_EQUIP_YN", "MANUF_DT", "SEAT_TYPE", "RESTRAINT_TYPE", "DEALER_NAME", "DEALER_TEL",
    "DEALER_CITY", "DEALER_STATE", "DEALER_ZIP", "PROD_TYPE", "REPAIRED_YN", "MEDICAL_ATTN",
    "VEHICLES_TOWED_YN",
)  # fmt: skip
# The 2026 file has 51 fields: the two newest, as CMPL.txt names them (reference §5).
CMPL_FIELDS_51 = (*CMPL_FIELDS_49, "STATE_OF_INCIDENT", "VEHICLE_OPERATOR")

RCL_FIELDS = (
    "RECORD_ID", "CAMPNO", "MAKETXT", "MODELTXT", "YEARTXT", "MFGCAMPNO", "COMPNAME", "MFGNAME",
    "BGMAN", "ENDMAN", "RCLTYPECD", "POTAFF", "ODATE", "INFLUENCED_BY", "MFGTXT", "RCDATE",
    "DATEA", "RPNO", "FMVSS", "DESC_DEFECT", "CONEQUENCE_DEFECT", "CORRECTIVE_ACTION", "NOTES",
    "RCL_CMPT_ID", "MFR_COMP_NAME", "MFR_COMP_DESC", "MFR_COMP_PTNO", "DO_NOT_DRIVE",
    "PARK_OUTSIDE",
)  # fmt: skip

INV_FIELDS = (
    "NHTSA ACTION NUMBER", "MAKE", "MODEL", "YEAR", "COMPNAME", "MFR_NAME", "ODATE", "CDATE",
    "CAMPNO", "SUBJECT", "SUMMARY",
)  # fmt: skip

# TSBS_RECEIVED_*: names as read by one third-party project (not confirmed against TSBS.txt).
TSBS_FIELDS_14 = (
    "nhtsaID", "replID", "nhtsaDate", "tsbID", "manufacturerDate", "manufacturerID", "type",
    "make", "model", "year", "component", "mfrComponent", "mfrSubcomponent", "summary",
)  # fmt: skip
TSBS_FIELDS_10 = (
    "BULNO", "BULREP", "ID", "BULDTE", "COMPNAME", "MAKE", "MODEL", "YEAR", "DATEA", "SUMMARY",
)  # fmt: skip


@dataclass(frozen=True)
class FieldNames:
    """The names of one layout's fields, and the version of that naming.

    The names become the keys of every stored row, so they are part of a document's bytes.
    A correction (a placeholder given its official name, an unofficial name replaced) bumps
    ``version``: each document's provenance names the layout and version it was read with,
    so the new bytes show up as a layout change, not as unexplained churn."""

    name: str
    version: int
    fields: tuple[str, ...]
    official: bool = True

    @property
    def label(self) -> str:
        return f"{self.name}.v{self.version}"


# Version history: CMPL_51 v1 named fields 50 and 51 FIELD_50 / FIELD_51; v2 gives them the
# names of NHTSA's CMPL.txt. The TSBS names are unofficial (read by one third party).
CMPL_49 = FieldNames("CMPL_49", 1, CMPL_FIELDS_49)
CMPL_51 = FieldNames("CMPL_51", 2, CMPL_FIELDS_51)
RCL_29 = FieldNames("RCL_29", 1, RCL_FIELDS)
INV_11 = FieldNames("INV_11", 1, INV_FIELDS)
TSBS_14 = FieldNames("TSBS_14", 1, TSBS_FIELDS_14, official=False)
TSBS_10 = FieldNames("TSBS_10", 1, TSBS_FIELDS_10, official=False)


@dataclass(frozen=True)
class Layout:
    """One flat file's layouts (by field count), identity, vehicle and date fields."""

    name: str
    kind: str
    layouts: tuple[FieldNames, ...]
    date_fields: frozenset[str]
    make_fields: tuple[str, ...]
    model_fields: tuple[str, ...]
    year_fields: tuple[str, ...]

    @property
    def fields_by_count(self) -> dict[int, tuple[str, ...]]:
        return {len(names.fields): names.fields for names in self.layouts}

    @property
    def doc_kind(self) -> str:
        return DOC_KIND[self.kind]

    @property
    def source_format(self) -> str:
        """The file's format, as scopes name it: ``flat:FLAT_CMPL``."""
        return f"flat:{self.name}"

    def record_format(self, rows: Sequence[dict[str, str]]) -> str:
        """The format a document was read in, with the layout and version of its rows:
        ``flat:FLAT_CMPL/CMPL_51.v2`` (several, joined by ``+``, if its rows differ)."""
        by_count = {len(names.fields): names for names in self.layouts}
        labels = sorted({by_count[len(r)].label for r in rows if len(r) in by_count})
        return f"{self.source_format}/{'+'.join(labels)}" if labels else self.source_format

    def expected_counts(self) -> str:
        return " or ".join(str(n) for n in sorted(self.fields_by_count))


LAYOUTS: dict[str, Layout] = {
    "complaints": Layout(
        name="FLAT_CMPL",
        kind="complaints",
        layouts=(CMPL_49, CMPL_51),
        date_fields=frozenset({"FAILDATE", "DATEA", "LDATE", "PURCH_DT", "MANUF_DT"}),
        make_fields=("MAKETXT",),
        model_fields=("MODELTXT",),
        year_fields=("YEARTXT",),
    ),
    "recalls": Layout(
        name="FLAT_RCL",
        kind="recalls",
        layouts=(RCL_29,),
        date_fields=frozenset({"BGMAN", "ENDMAN", "ODATE", "RCDATE", "DATEA"}),
        make_fields=("MAKETXT",),
        model_fields=("MODELTXT",),
        year_fields=("YEARTXT",),
    ),
    "investigations": Layout(
        name="FLAT_INV",
        kind="investigations",
        layouts=(INV_11,),
        date_fields=frozenset({"ODATE", "CDATE"}),
        make_fields=("MAKE",),
        model_fields=("MODEL",),
        year_fields=("YEAR",),
    ),
    "communications": Layout(
        name="TSBS_RECEIVED",
        kind="communications",
        layouts=(TSBS_14, TSBS_10),
        date_fields=frozenset({"nhtsaDate", "manufacturerDate", "BULDTE", "DATEA"}),
        make_fields=("make", "MAKE"),
        model_fields=("model", "MODEL"),
        year_fields=("year", "YEAR"),
    ),
}


# -- reading lines -------------------------------------------------------------------------
@dataclass
class LineSource:
    """The data lines of a flat file (zipped or not), with read progress in bytes."""

    path: Path
    member: str | None = None
    total_bytes: int = 0
    bytes_read: int = 0
    name: str = ""

    def __post_init__(self) -> None:
        if not self.path.is_file():
            raise FlatFileError(f"no such file: {self.path}")
        if not zipfile.is_zipfile(self.path):
            self.total_bytes = self.path.stat().st_size
            self.name = self.path.name
            return
        with zipfile.ZipFile(self.path) as archive:
            info = pick_member(archive, self.member, self.path)
        self.member = info.filename
        self.total_bytes = info.file_size
        self.name = info.filename

    def __iter__(self) -> Iterator[tuple[int, str]]:
        """``(line number, text)`` for every non-empty line, decoded from ISO-8859-1."""
        self.bytes_read = 0
        with self._open() as raw:
            for number, line in enumerate(raw, 1):
                self.bytes_read += len(line)
                text = line.rstrip(b"\r\n")
                if text:
                    yield number, text.decode(ENCODING)

    def pieces(self, size: int) -> Iterator[bytes]:
        """The file's bytes (a zip's data member inflated), in pieces of at most ``size``."""
        if self.member is None:
            with self.path.open("rb", buffering=0) as handle:
                while piece := handle.read(size):
                    yield piece
            return
        with zipfile.ZipFile(self.path) as archive:
            info = archive.getinfo(self.member)
        yield from member_pieces(self.path, info, size)

    def _open(self) -> IO[bytes]:
        if self.member is None:
            return self.path.open("rb", buffering=1 << 20)
        archive = zipfile.ZipFile(self.path)
        try:
            return _ClosingReader(archive.open(self.member), archive)
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


def pick_member(archive: zipfile.ZipFile, member: str | None, path: Path) -> zipfile.ZipInfo:
    files = [i for i in archive.infolist() if not i.is_dir()]
    if member is not None:
        for info in files:
            if info.filename == member:
                return info
        raise FlatFileError(
            f"{path.name} has no member {member!r}; it holds: "
            + ", ".join(i.filename for i in files)
        )
    if len(files) == 1:
        return files[0]
    if not files:
        raise FlatFileError(f"{path.name} is an empty zip")
    raise FlatFileError(
        f"{path.name} holds several files ({', '.join(i.filename for i in files)}); "
        "name the data file with --member"
    )


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


# -- parsing rows --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Malformed:
    line: int
    reason: str


@dataclass(frozen=True, slots=True)
class FlatRow:
    line: int
    key: str
    values: dict[str, str]


@dataclass(frozen=True)
class VehicleFilter:
    """Rows about one make/model and a model-year range (each optional, case-insensitive).
    With a year range, rows without a model year (``9999``, blank) are left out."""

    make: str | None = None
    model: str | None = None
    years: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "make", self.make.strip().upper() if self.make else None)
        object.__setattr__(self, "model", self.model.strip().upper() if self.model else None)

    @property
    def active(self) -> bool:
        return bool(self.make or self.model or self.years)

    def describe(self) -> str:
        years = f"{self.years[0]}-{self.years[1]}" if self.years else "all-years"
        return f"{self.make or 'any-make'}/{self.model or 'any-model'}/{years}"


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


def is_header(layout: Layout, text: str) -> bool:
    first = text.split("\t", 1)[0].strip()
    return any(first == names[0] for names in layout.fields_by_count.values())


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


# -- documents -----------------------------------------------------------------------------
# The shape of a flat-file document's bytes (below). Part of every document's input
# fingerprint: change it whenever that shape changes, so that a backfill builds every
# document again instead of trusting fingerprints recorded under the old shape.
FLAT_BODY_VERSION = "flat-body-v1"


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


# -- the fast path: raw lines in bulk, rows checked by index, documents built from text ----
CHUNK_BYTES = 1 << 22
_PREFETCH = 4


def _whole_lines(pieces: list[bytes]) -> tuple[bytes | None, list[bytes]]:
    """The whole lines ``pieces`` hold, joined, without the line end after the last of them
    (None if no piece holds a line end), and the pieces of what follows."""
    for at in range(len(pieces) - 1, -1, -1):
        piece = pieces[at]
        cut = piece.rfind(b"\n")
        if cut < 0:
            continue
        rest = [r for r in (piece[cut + 1 :], *pieces[at + 1 :]) if r]
        if at == 0:
            return piece[:cut], rest
        return b"".join([*pieces[:at], memoryview(piece)[:cut]]), rest
    return None, pieces


def _blocks(pieces: Iterable[bytes], size: int) -> Iterator[tuple[bytes, int, int]]:
    """Blocks of whole lines cut from ``pieces`` each time about ``size`` bytes are held:
    each with how many line numbers it spans (its line ends and the one cut after it; 0 for
    a last line with no line end after it) and how many bytes were read by then."""
    pending: list[bytes] = []
    held = read = 0
    for piece in pieces:
        pending.append(piece)
        held += len(piece)
        read += len(piece)
        if held >= size:
            block, pending = _whole_lines(pending)
            held = sum(map(len, pending))
            if block is not None:
                yield block, block.count(b"\n") + 1, read
    block, pending = _whole_lines(pending)
    if block is not None:
        yield block, block.count(b"\n") + 1, read
    if pending:
        yield b"".join(pending), 0, read


def read_blocks(source: LineSource, size: int = CHUNK_BYTES) -> Iterator[tuple[int, bytes]]:
    """``(number of the first line, bytes)`` for the whole file, about ``size`` bytes of whole
    lines at a time (ISO-8859-1, line ends between them, none after the last); lines are
    numbered as :class:`LineSource` numbers them (empty lines included). A thread reads,
    inflates and cuts the blocks ahead of the caller (zlib releases the GIL), so unzipping
    overlaps the parsing."""
    blocks: queue.Queue[tuple[bytes, int, int] | BaseException | None] = queue.Queue(_PREFETCH)
    stop = threading.Event()

    def put(item: tuple[bytes, int, int] | BaseException | None) -> bool:
        while not stop.is_set():
            try:
                blocks.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def reader() -> None:
        try:
            for block in _blocks(source.pieces(size), size):
                if not put(block):
                    return
            put(None)
        except BaseException as exc:  # handed to the consumer, raised there
            put(exc)

    thread = threading.Thread(target=reader, name="flatfile-reader", daemon=True)
    thread.start()
    source.bytes_read = 0
    number = 1
    try:
        while True:
            item = blocks.get()
            if isinstance(item, BaseException):
                raise item
            if item is None:
                break
            block, lines, source.bytes_read = item
            yield number, block
            number += lines
    finally:
        stop.set()
        thread.join()


def _lines(data: bytes) -> pa.Array:
    """The lines of a block as Arrow strings: decoded from ISO-8859-1, split at each line
    end, carriage returns before it stripped; no Python string is made per line. A block of
    ASCII is its own UTF-8: Arrow splits it in place, without the GIL."""
    if data.isascii():
        offsets = pa.array([0, len(data)], pa.int32()).buffers()[1]
        whole = pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(data)])
        carriage = b"\r" in data
    else:
        text = data.decode(ENCODING)
        whole = pa.array([text], pa.string())
        carriage = "\r" in text
    lines = pc.split_pattern(whole, "\n").flatten()
    return pc.utf8_rtrim(lines, characters="\r") if carriage else lines


def _raw_lines(data: bytes) -> list[bytes]:
    raw = data.split(b"\n")
    return [line.rstrip(b"\r") for line in raw] if b"\r" in data else raw


def line_digests(data: bytes) -> pa.FixedSizeBinaryArray:
    """SHA-256 of each raw line of a block (its line end stripped), 32 bytes each. (Hashing
    the lines of a 4 MB block as ``bytes`` split from it takes ~6.3 ms; read in place from
    an Arrow array split from it, ~8 ms.)"""
    return sha256_digests(_raw_lines(data))


# Characters a JSON string holds as they are: no control character but the tab (the
# separator). Lines are ISO-8859-1, so their characters are their bytes.
_CONTROL = frozenset(map(chr, range(0x20))) - {"\t"}


def is_plain(line: str) -> bool:
    """Whether a line's fields go into JSON as they are (but for ``\\`` and ``"``): it has no
    control character, which JSON escapes."""
    return _CONTROL.isdisjoint(line)


def text_table(number: int, data: bytes) -> pa.Table:
    """The lines of a block as Arrow: ``number``, ``text``."""
    lines = _lines(data)
    return pa.table(
        {"number": pa.array(range(number, number + len(lines)), pa.int64()), "text": lines}
    )


def checked_table(number: int, data: bytes, digests: pa.Array | None = None) -> pa.Table:
    """The lines of a block as Arrow for checking: ``number``, ``text`` and ``h`` (SHA-256 of
    the raw line, line end stripped, as 32 bytes: ``digests``, when the caller made them
    with :func:`line_digests`). Only the digests hold the GIL for long: a caller may make
    them in one thread and the rest in another."""
    table = text_table(number, data)
    return table.append_column("h", [line_digests(data) if digests is None else digests])


@dataclass(frozen=True)
class RowShape:
    """One layout's field list compiled to indexes: where the identity, dates, model year,
    make and model sit, and the permutation that puts a row's fields in key order."""

    names: FieldNames
    key_names: tuple[str, ...]
    key_indexes: tuple[int, ...]
    date_indexes: tuple[int, ...]
    year_index: int | None
    make_index: int | None
    model_index: int | None
    sorted_names: tuple[str, ...]
    order: tuple[int, ...]

    @classmethod
    def of(cls, layout: Layout, names: FieldNames) -> RowShape:
        fields = names.fields

        def first(candidates: Sequence[str]) -> int | None:
            return next((fields.index(n) for n in candidates if n in fields), None)

        key_fields = [n for n in KEY_FIELDS[layout.kind] if n in fields]
        order = tuple(sorted(range(len(fields)), key=fields.__getitem__))
        return cls(
            names=names,
            key_names=tuple(key_fields),
            key_indexes=tuple(fields.index(n) for n in key_fields),
            date_indexes=tuple(i for i, n in enumerate(fields) if n in layout.date_fields),
            year_index=first(layout.year_fields),
            make_index=first(layout.make_fields),
            model_index=first(layout.model_fields),
            sorted_names=tuple(fields[i] for i in order),
            order=order,
        )


_CACHE_LIMIT = 1 << 16


class RowChecker:
    """:func:`parse_line` and :func:`row_matches` over a line's fields by index, with the
    verdicts on dates and model years remembered (a file repeats them endlessly)."""

    def __init__(self, layout: Layout, wanted: VehicleFilter) -> None:
        self.layout = layout
        self.wanted = wanted
        self.shapes = {len(n.fields): RowShape.of(layout, n) for n in layout.layouts}
        self._dates: dict[str, str | None] = {}
        self._years: dict[str, tuple[int | None, str | None]] = {}
        self._numeric = layout.kind in ("complaints", "communications")

    def _date_error(self, value: str) -> str | None:
        try:
            return self._dates[value]
        except KeyError:
            pass
        try:
            flat_date(value)
            error = None
        except NhtsaParseError as exc:
            error = str(exc)
        if len(self._dates) >= _CACHE_LIMIT:
            self._dates.clear()
        self._dates[value] = error
        return error

    def year(self, value: str) -> tuple[int | None, str | None]:
        try:
            return self._years[value]
        except KeyError:
            pass
        try:
            found: tuple[int | None, str | None] = (model_year(value), None)
        except NhtsaParseError as exc:
            found = (None, str(exc))
        if len(self._years) >= _CACHE_LIMIT:
            self._years.clear()
        self._years[value] = found
        return found

    def key(self, shape: RowShape, parts: Sequence[str]) -> str:
        """What :func:`record_key` gives for the row (a plain number takes a short cut)."""
        if self._numeric and len(shape.key_indexes) == 1:
            text = parts[shape.key_indexes[0]].strip()
            if is_ascii_digits(text):
                return str(int(text))
        return record_key(
            self.layout.kind,
            dict(zip(shape.key_names, (parts[i] for i in shape.key_indexes), strict=True)),
        )

    def check(self, parts: list[str]) -> str | tuple[str, bool]:
        """Why the fields of a line are malformed, or ``(key, matches the vehicle filter)``."""
        shape = self.shapes.get(len(parts))
        if shape is None:
            return (
                f"expected {self.layout.expected_counts()} tab-separated fields, found {len(parts)}"
            )
        try:
            key = self.key(shape, parts)
        except NhtsaParseError as exc:
            return str(exc)
        for index in shape.date_indexes:
            if (error := self._date_error(parts[index])) is not None:
                return error
        year, error = self.year(parts[shape.year_index] if shape.year_index is not None else "")
        if error is not None:
            return error
        return key, self._matches(shape, parts, year)

    def _matches(self, shape: RowShape, parts: list[str], year: int | None) -> bool:
        wanted = self.wanted
        if not wanted.active:
            return True
        if wanted.make and _at(parts, shape.make_index).strip().upper() != wanted.make:
            return False
        if wanted.model and _at(parts, shape.model_index).strip().upper() != wanted.model:
            return False
        if wanted.years:
            return year is not None and wanted.years[0] <= year <= wanted.years[1]
        return True

    def body(self, lines: Sequence[str]) -> tuple[bytes, str]:
        """The stored bytes of the document made of ``lines`` (checked rows, file order) and
        its format: byte for byte what :func:`flat_body` and :meth:`Layout.record_format`
        give for the same rows. Fields are placed in key order, so orjson need not sort."""
        rows = []
        years: set[int] = set()
        labels: set[str] = set()
        for line in lines:
            parts = line.split("\t")
            shape = self.shapes[len(parts)]
            rows.append(dict(zip(shape.sorted_names, [parts[i] for i in shape.order], strict=True)))
            labels.add(shape.names.label)
            if shape.year_index is not None:
                year = self.year(parts[shape.year_index])[0]
                if year is not None:
                    years.add(year)
        body = right_sized(orjson.dumps({"modelYears": sorted(years), "rows": rows}))
        return body, f"{self.layout.source_format}/{'+'.join(sorted(labels))}"


def _at(parts: Sequence[str], index: int | None) -> str:
    return parts[index] if index is not None else ""


def flat_spec(layout: Layout, wanted: VehicleFilter) -> FlatSpec:
    """What the warehouse's bulk path needs of ``layout``: each field list compiled to
    indexes, the identities it may take as they stand, the vehicle filter."""
    pattern, numeric = PLAIN_KEYS[layout.kind]
    shapes = []
    for names in layout.layouts:
        shape = RowShape.of(layout, names)
        shapes.append(
            ShapeSpec(
                count=len(names.fields),
                label=names.label,
                sorted_names=shape.sorted_names,
                order=shape.order,
                key_index=shape.key_indexes[0] if shape.key_indexes else None,
                key_pattern=pattern,
                key_numeric=numeric,
                date_indexes=shape.date_indexes,
                year_index=shape.year_index,
                make_index=shape.make_index,
                model_index=shape.model_index,
            )
        )
    labels = "+".join(names.label for names in layout.layouts)
    rules = f"canonical-v{CANONICAL_FORM_VERSION}|{FLAT_BODY_VERSION}|{layout.name}|{labels}|"
    return FlatSpec(
        shapes=tuple(shapes),
        doc_prefix=f"nhtsa/{layout.doc_kind}/",
        kind=layout.doc_kind,
        source_format=layout.source_format,
        salt=rules,
        make=wanted.make,
        model=wanted.model,
        years=wanted.years,
    )
