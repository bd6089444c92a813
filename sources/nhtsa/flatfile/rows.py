"""The row judge: the line-at-a-time rules of a flat file's rows.

:class:`RowChecker` has the last word on every line the warehouse's bulk check cannot vouch
for (:meth:`RowChecker.judge`), and builds the bytes of a document the bulk build cannot
assemble (:meth:`RowChecker.body`): it is the :class:`warehouse.bulk.spec.RowJudge` a
backfill hands the engine. (``tests/backfill/reference.py`` keeps the reference path it
stands in for, a dict per row, which only the tests call.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from sources.digits import is_ascii_digits
from sources.nhtsa.flatfile.layouts import FieldNames, Layout
from sources.nhtsa.parse import _KEY_FIELDS as KEY_FIELDS
from sources.nhtsa.parse import flat_date, model_year, record_key
from warehouse.bulk.spec import Accepted
from warehouse.canonical import right_sized
from warehouse.errors import NhtsaParseError
from warehouse.ids import doc_id

SOURCE = "nhtsa"


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
    """A layout's rules over a line's fields by index (the reference path's ``parse_line``
    and ``row_matches``), with the verdicts on dates and model years remembered (a file
    repeats them endlessly)."""

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

    def judge(self, text: str) -> Accepted | str | None:
        """The verdict on a line the bulk check left to this checker: why it is malformed,
        None when it is well formed but not wanted, else its identity and model year (an
        identity no document id can hold is refused)."""
        parts = text.split("\t")
        verdict = self.check(parts)
        if isinstance(verdict, str):
            return verdict
        key, wanted = verdict
        if not wanted:
            return None
        doc_id(SOURCE, self.layout.doc_kind, key)
        shape = self.shapes[len(parts)]
        year_text = parts[shape.year_index] if shape.year_index is not None else ""
        return Accepted(key, self.year(year_text)[0])

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
        its format: byte for byte what the reference path's ``flat_body`` and
        :meth:`Layout.record_format` give for the same rows. Fields are placed in key order,
        so orjson need not sort."""
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
