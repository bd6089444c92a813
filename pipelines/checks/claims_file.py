"""A claims file read: the claims of an NDJSON or CSV file (or of any rows), each checked
for what a claim needs, with the rows that cannot be checked kept as bad rows and why.

A claim is ``{claim_id, doc_id, quote, revision | content_hash}``; a field mapping renames
the columns. Checking a claim set against the warehouse is :mod:`pipelines.checks.claims`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.checks.quote import reader_text
from warehouse.errors import UsageError
from warehouse.hash_prefix import MIN_HASH_PREFIX, hash_prefix_problem, normalise

DEFAULT_FIELDS = {
    "claim_id": "claim_id",
    "doc_id": "doc_id",
    "quote": "quote",
    "revision": "revision",
    "content_hash": "content_hash",
}
# The largest revision number a warehouse can hold (its revision columns are 32-bit).
MAX_REVISION = 2**31 - 1


# -- claims --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Claim:
    """One cited quote; ``origin`` says where it was read (``line 3``, ``_id abc``)."""

    claim_id: str
    doc_id: str
    quote: str
    revision: int | None = None
    content_hash: str | None = None
    origin: str = ""

    @property
    def quote_hash(self) -> str:
        return hashlib.sha256(self.quote.encode("utf-8")).hexdigest()

    def cites(self) -> str:
        parts = []
        if self.revision is not None:
            parts.append(f"revision {self.revision}")
        if self.content_hash is not None:
            parts.append(f"hash {self.content_hash[:12]}")
        return " / ".join(parts)


@dataclass(frozen=True)
class BadClaim:
    """A claim row that cannot be checked, and why."""

    origin: str
    problem: str
    claim_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"origin": self.origin, "claim_id": self.claim_id, "problem": self.problem}


@dataclass
class ClaimSet:
    """The claims of one claim set: ``name`` is what the ledger files them under (the
    corpus, or the claims file)."""

    name: str
    claims: list[Claim] = field(default_factory=list)
    bad: list[BadClaim] = field(default_factory=list)


def _text(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):  # bool is handled above
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def parse_claim(
    raw: Mapping[str, Any], origin: str, fields: Mapping[str, str] | None = None
) -> Claim:
    """A claim from one row, through the field mapping; ``ValueError`` says what is wrong."""
    names = {**DEFAULT_FIELDS, **(fields or {})}
    claim_id = _text(raw.get(names["claim_id"]))
    if claim_id is None:
        raise ValueError(f"no {names['claim_id']!r} (the claim's id)")
    doc_id = _text(raw.get(names["doc_id"]))
    if doc_id is None:
        raise ValueError(f"no {names['doc_id']!r} (the cited document)")
    quote = raw.get(names["quote"])
    if not isinstance(quote, str) or not quote.strip():
        raise ValueError(f"no {names['quote']!r} (the quoted text)")
    if not reader_text(quote):
        raise ValueError("the quote is empty once markup and whitespace are removed")
    revision: int | None = None
    raw_revision = raw.get(names["revision"])
    if raw_revision not in (None, ""):
        text = _text(raw_revision)
        if text is None or not (text.isascii() and text.isdigit()) or not text.strip("0"):
            raise ValueError(f"{names['revision']!r} must be a revision number (1, 2, …)")
        text = text.lstrip("0")
        if len(text) > len(str(MAX_REVISION)) or int(text) > MAX_REVISION:
            shown = text if len(text) <= 30 else f"{text[:12]}…({len(text)} digits)"
            raise ValueError(
                f"{names['revision']!r} {shown} is past any revision a warehouse holds "
                f"(at most {MAX_REVISION:,})"
            )
        revision = int(text)
    content_hash = _text(raw.get(names["content_hash"]))
    if content_hash is not None:
        content_hash = normalise(content_hash)
        if hash_prefix_problem(content_hash) is not None:
            raise ValueError(
                f"{names['content_hash']!r} must be a SHA-256 in hex (at least "
                f"{MIN_HASH_PREFIX} digits)"
            )
    if revision is None and content_hash is None:
        raise ValueError(
            f"cites no revision: give {names['revision']!r} or {names['content_hash']!r}"
        )
    return Claim(claim_id, doc_id, quote, revision, content_hash, origin)


def collect(
    name: str, rows: Iterable[tuple[str, Mapping[str, Any] | str]], fields: Mapping[str, str]
) -> ClaimSet:
    """A claim set from (origin, row) pairs; a row given as a string is a problem already
    found (e.g. malformed JSON). Later duplicates of a claim_id are bad rows."""
    out = ClaimSet(name)
    seen: dict[str, str] = {}
    for origin, row in rows:
        if isinstance(row, str):
            out.bad.append(BadClaim(origin, row))
            continue
        try:
            claim = parse_claim(row, origin, fields)
        except ValueError as exc:
            out.bad.append(BadClaim(origin, str(exc), _text(row.get(fields["claim_id"]))))
            continue
        if claim.claim_id in seen:
            out.bad.append(
                BadClaim(
                    origin,
                    f"claim {claim.claim_id!r} repeats the one at {seen[claim.claim_id]}",
                    claim.claim_id,
                )
            )
            continue
        seen[claim.claim_id] = origin
        out.claims.append(claim)
    return out


def _ndjson_rows(text: str) -> Iterator[tuple[str, Mapping[str, Any] | str]]:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            yield f"line {number}", f"not JSON: {exc}"
            continue
        except RecursionError:
            yield f"line {number}", "not a claim: nested too deeply to read"
            continue
        if not isinstance(value, dict):
            yield f"line {number}", "not a JSON object"
            continue
        yield f"line {number}", value


def _csv_rows(text: str) -> Iterator[tuple[str, Mapping[str, Any] | str]]:
    reader = csv.DictReader(io.StringIO(text))
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:  # e.g. a field past the csv module's size limit
            # the reader goes on at the next line
            yield f"line {reader.line_num + 1}", f"not a CSV row: {exc}"
            continue
        # line_num is the physical line the row ended on (a quoted field may span lines)
        yield f"line {reader.line_num}", {k: v for k, v in row.items() if k is not None}


def read_claims_file(
    path: Path, fields: Mapping[str, str] | None = None, name: str | None = None
) -> ClaimSet:
    """Claims from an NDJSON file (one object per line) or a CSV file with a header row
    (by its ``.csv`` suffix), in UTF-8 with or without a byte order mark."""
    try:
        text = path.read_text("utf-8-sig")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such claims file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the claims file: {exc}") from None
    rows = _csv_rows(text) if path.suffix.lower() == ".csv" else _ndjson_rows(text)
    return collect(name or str(path), rows, {**DEFAULT_FIELDS, **(fields or {})})
