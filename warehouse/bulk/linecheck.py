"""The bulk check of a flat file's lines, in Arrow: which lines a backfill takes as they stand,
with the identity, model year and vehicle verdict of each, and which it leaves to the
source's line-at-a-time checker (the row judge, :class:`warehouse.bulk.spec.RowJudge`),
whose verdicts :func:`judged_rows` adds.

A line is accepted when it fully matches its layout's pattern (:func:`line_pattern`): the
layout's number of fields, the identity of the plain shape its kind allows, each date blank,
``00000000`` or a calendar date ``YYYYMMDD``, the model year blank or four digits, and no
control character (JSON escapes those, so a line holding one is not *plain*: its document
is built by the caller). The patterns are stricter than that checker, never looser: a date
they cannot vouch for (29 February, a year before 1000), a field with spaces around it or a
line with a control character is left to it, and it has the last word. The fields the
verdicts need are then read with one more pattern per layout (:func:`fields_pattern`).

Arrow runs these patterns (RE2) over a block's lines without the GIL, so the check of one
block overlaps the hashing of the next. (A 4 MB block of complaints: ~11 ms for the line
patterns and ~2 ms for the fields, where splitting each line into fields in DuckDB and
checking them one by one took ~27 ms.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from warehouse.bulk.spec import FlatSpec, Malformed, RowJudge, ShapeSpec
from warehouse.value_hashes import DIGEST_TYPE

# A date field: blank, all zeros, or a date every calendar has (a day up to the 28th of any
# month, the 29th or 30th of any but February, the 31st of a month of 31 days), year 1000 or
# later. 29 February is left to the line-at-a-time checker, which knows leap years.
DATE = (
    "(?:|00000000|[1-9][0-9]{3}(?:"
    "(?:0[1-9]|1[0-2])(?:0[1-9]|1[0-9]|2[0-8])"
    "|(?:0[13-9]|1[0-2])(?:29|30)"
    "|(?:0[13578]|1[02])31))"
)
MODEL_YEAR = "(?:[0-9]{4})?"
_FIELD = "[^\\t]*"
# A field of a plain line: no control character (JSON escapes those), tabs separate fields.
_PLAIN_FIELD = "[^\\x00-\\x1f]*"

# The columns of the rows a check keeps (and of every row staged for the plan).
KEPT_SCHEMA = pa.schema(
    [
        ("number", pa.int64()),
        ("key", pa.string()),
        ("h", DIGEST_TYPE),
        ("n", pa.int32()),
        ("year", pa.int32()),
        ("plain", pa.bool_()),
    ]
)


def line_pattern(shape: ShapeSpec) -> str | None:
    """The pattern (RE2) a line of ``shape`` matches whole when it may be taken as it stands;
    None when no line of it may (it has no identity field)."""
    if shape.key_index is None:
        return None
    fields = []
    for index in range(shape.count):
        if index == shape.key_index:
            fields.append(f"(?:{shape.key_pattern})")
        elif index in shape.date_indexes:
            fields.append(DATE)
        elif index == shape.year_index:
            fields.append(MODEL_YEAR)
        else:
            fields.append(_PLAIN_FIELD)
    return "^" + "\\t".join(fields) + "$"


def fields_pattern(indexes: Mapping[str, int]) -> str:
    """A pattern whose named groups are the fields at ``indexes`` (0-based) of a line."""
    pattern, after = "^", -1
    for name, index in sorted(indexes.items(), key=lambda item: item[1]):
        skipped = index - after - 1
        if after >= 0:
            pattern += "\\t"
        if skipped:
            pattern += f"(?:{_FIELD}\\t){{{skipped}}}"
        pattern += f"(?P<{name}>{_FIELD})"
        after = index
    return pattern


@dataclass(frozen=True)
class Verdicts:
    rows: int  # lines checked (not empty, not the header)
    kept: pa.Table  # the wanted rows accepted (:data:`KEPT_SCHEMA`)
    suspects: list[int]  # lines the caller must check itself, in order
    field_counts: dict[int, int]  # the lines checked by their number of tab-separated fields

    @property
    def matched(self) -> int:
        """Rows accepted here that the vehicle filter keeps."""
        return len(self.kept)


class LineCheck:
    """The check of a flat file's blocks against ``spec``. The layout most lines matched so
    far is tried first; a line is tried against another only when it did not match."""

    def __init__(self, spec: FlatSpec) -> None:
        self.spec = spec
        self._patterns = {s: p for s in spec.shapes if (p := line_pattern(s)) is not None}
        self._matched = dict.fromkeys((s.count for s in self._patterns), 0)

    def __call__(self, chunk: pa.Table, skip_line: int = 0) -> Verdicts:
        """Verdicts on ``chunk``'s lines (``number``, ``text``, ``h``), but for empty lines
        and line ``skip_line`` (a header)."""
        considered = pc.and_(
            pc.not_equal(chunk["text"], ""), pc.not_equal(chunk["number"], skip_line)
        )
        lines = chunk if pc.all(considered).as_py() else chunk.filter(considered)
        rows = len(lines)
        kept: list[pa.Table] = []
        undecided: list[pa.Array] = []
        # A line that matched a layout's pattern has its number of fields: only the others
        # are counted (counting every line's tabs took about as long as the check).
        counts: dict[int, int] = {}
        for shape in sorted(self._patterns, key=lambda s: -self._matched[s.count]):
            if not len(lines):
                break
            ok = pc.match_substring_regex(lines["text"], self._patterns[shape])
            if pc.all(ok).as_py():
                matched, lines = lines, lines.slice(0, 0)
            else:
                matched, lines = lines.filter(ok), lines.filter(pc.invert(ok))
            if not len(matched):
                continue
            self._matched[shape.count] += len(matched)
            counts[shape.count] = counts.get(shape.count, 0) + len(matched)
            rows_of_shape, wanted = self._verdicts(shape, matched)
            if wanted.null_count:  # only the caller can tell
                undecided.append(matched["number"].filter(pc.is_null(wanted)))
            kept.append(rows_of_shape.filter(pc.fill_null(wanted, False)))
        suspects = sorted(
            int(n) for numbers in [*undecided, lines["number"]] for n in numbers.to_pylist()
        )
        table = pa.concat_tables(kept) if kept else KEPT_SCHEMA.empty_table()
        for count, number in _field_counts(lines["text"]).items():
            counts[count] = counts.get(count, 0) + number
        return Verdicts(rows, table, suspects, counts)

    def _verdicts(self, shape: ShapeSpec, lines: pa.Table) -> tuple[pa.Table, pa.Array]:
        """The rows of ``lines`` (all of ``shape``, accepted) as kept, and whether each is
        wanted (null where only the caller can tell)."""
        spec = self.spec
        assert shape.key_index is not None
        indexes = {"key": shape.key_index}
        for name, index, needed in (
            ("year", shape.year_index, True),
            ("make", shape.make_index, spec.make is not None),
            ("model", shape.model_index, spec.model is not None),
        ):
            if index is not None and needed:
                indexes[name] = index
        fields = pc.extract_regex(lines["text"].combine_chunks(), fields_pattern(indexes))
        key = fields.field("key")
        if shape.key_numeric:  # as str(int(...)): leading zeros dropped
            key = key.cast(pa.int64()).cast(pa.string())
        if "year" in indexes:
            text = fields.field("year")
            known = pc.and_(pc.not_equal(text, ""), pc.not_equal(text, "9999"))
            year = pc.if_else(known, text, pa.scalar(None, pa.string())).cast(pa.int32())
        else:
            year = pa.nulls(len(lines), pa.int32())
        wanted = pa.repeat(pa.scalar(True), len(lines))
        for name, value in (("make", spec.make), ("model", spec.model)):
            if value is None:
                continue
            if name not in indexes:
                wanted = pa.repeat(pa.scalar(False), len(lines))
                continue
            text = fields.field(name)
            # Beyond printable ASCII, Python's upper case may differ from Arrow's: undecided.
            printable = pc.match_substring_regex(text, "^[ -~]*$")
            same = pc.equal(pc.utf8_upper(pc.utf8_trim(text, " ")), value)
            wanted = pc.and_kleene(wanted, pc.if_else(printable, same, pa.scalar(None, pa.bool_())))
        if spec.years is not None:
            lo, hi = spec.years
            within = pc.and_(pc.greater_equal(year, lo), pc.less_equal(year, hi))
            wanted = pc.and_kleene(wanted, pc.fill_null(within, False))
        count = len(lines)
        kept = pa.table(
            [lines["number"], key, lines["h"], pa.repeat(pa.scalar(shape.count, pa.int32()),
             count), year, pa.repeat(pa.scalar(True), count)],
            schema=KEPT_SCHEMA,
        )  # fmt: skip
        return kept, wanted


def _field_counts(text: pa.ChunkedArray) -> dict[int, int]:
    """How many of the lines ``text`` have each number of tab-separated fields."""
    if not len(text):
        return {}
    counts = pc.value_counts(pc.add(pc.count_substring(text, "\t"), 1))
    return dict(
        zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True)
    )


# Characters a JSON string holds as they are: no control character but the tab (the
# separator). Lines are ISO-8859-1, so their characters are their bytes.
_CONTROL = frozenset(map(chr, range(0x20))) - {"\t"}


def is_plain(line: str) -> bool:
    """Whether a line's fields go into JSON as they are (but for ``\\`` and ``"``): it has no
    control character, which JSON escapes."""
    return _CONTROL.isdisjoint(line)


def judged_rows(
    chunk: pa.Table, suspects: Sequence[int], judge: RowJudge
) -> tuple[pa.Table, list[Malformed]]:
    """The judge's verdict on the lines of ``chunk`` (``number``, ``text``, ``h``) the bulk
    check left to it: the wanted rows as kept (:data:`KEPT_SCHEMA`), and the malformed
    lines."""
    start = chunk["number"][0].as_py()
    texts, hashes = chunk["text"], chunk["h"]
    kept: dict[str, list[Any]] = {name: [] for name in KEPT_SCHEMA.names}
    malformed: list[Malformed] = []
    for number in suspects:
        at = number - start
        text = texts[at].as_py()
        verdict = judge.judge(text)
        if isinstance(verdict, str):
            malformed.append(Malformed(number, verdict))
            continue
        if verdict is None:
            continue
        for name, value in (
            ("number", number),
            ("key", verdict.key),
            ("h", hashes[at].as_py()),
            ("n", text.count("\t") + 1),
            ("year", verdict.year),
            ("plain", is_plain(text)),
        ):
            kept[name].append(value)
    return pa.table(kept, schema=KEPT_SCHEMA), malformed
