"""What a source says of its flat file to the warehouse's bulk path: the types at the bottom
of the backfill (nothing here imports the engine).

- :class:`FlatSpec` (of :class:`ShapeSpec`): the file's layouts compiled to indexes, the
  identities it may take as they stand, what a document's id, kind and bytes depend on, and
  the vehicle filter.
- :class:`RowJudge`: the source's line-at-a-time rules, handed to the engine once: the last
  word on every line the bulk check cannot vouch for, and the bytes of a document the bulk
  build cannot assemble.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ShapeSpec:
    """One layout of a flat file (its rows have ``count`` fields), for the bulk path.

    Indexes are 0-based positions in a line's fields. A row is accepted in bulk when its
    identity field fully matches ``key_pattern`` (the identity is then the field itself,
    through an integer when ``key_numeric``), each date field is blank, ``00000000`` or a
    calendar date ``YYYYMMDD``, the model year is blank or four digits, and it holds no
    control character (:func:`warehouse.bulk.linecheck.line_pattern`)."""

    count: int
    label: str
    sorted_names: tuple[str, ...]
    order: tuple[int, ...]
    key_index: int | None
    key_pattern: str
    key_numeric: bool
    date_indexes: tuple[int, ...]
    year_index: int | None
    make_index: int | None
    model_index: int | None


@dataclass(frozen=True)
class FlatSpec:
    """A flat file's layouts and what a backfill of it keeps."""

    shapes: tuple[ShapeSpec, ...]
    doc_prefix: str  # "nhtsa/complaint/": a document's id is the prefix and its key
    kind: str  # the documents' kind
    source_format: str  # "flat:FLAT_CMPL"; a document's is this, "/" and its rows' labels
    salt: str  # what else the bytes depend on: canonical form version, layout names
    make: str | None = None
    model: str | None = None
    years: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class Accepted:
    """A row the judge accepted and the vehicle filter keeps: its identity and model year."""

    key: str
    year: int | None


@dataclass(frozen=True, slots=True)
class Malformed:
    """A line that is not a row of its file, and why."""

    line: int
    reason: str


class RowJudge(Protocol):
    """The source's rules for one line and one document, where the bulk path cannot apply
    its own."""

    def judge(self, text: str) -> Accepted | str | None:
        """A line's verdict: why it is malformed, None when it is well formed but not
        wanted, or the row accepted."""
        ...

    def body(self, lines: Sequence[str]) -> tuple[bytes, str]:
        """The stored bytes of the document made of ``lines`` (its rows, file order) and
        its source format."""
        ...
