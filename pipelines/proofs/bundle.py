"""A proof bundle from the warehouse's rows (pure): the format is docs/proof-bundles.md,
checked by :mod:`pipelines.proofs.verify_receipt` and docs/proof-bundle.schema.json."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, NamedTuple

import orjson

from pipelines.checks.diffing import is_json_media
from pipelines.proofs.locate import Location
from pipelines.proofs.verify_receipt import FORMAT, VERSION
from sources.github.entry import web_file_url
from warehouse.proof_rows import ProofRow

SUFFIX = ".receipt.json"


@lru_cache(maxsize=4096)
def fast_instant(value: datetime) -> str:
    """:func:`~warehouse.tlog.entries.instant` (UTC, microseconds, ``Z``) through
    ``isoformat``, several times faster than ``strftime`` (a tenth of the time of 10,000
    bundles); the same text for any year from 1000 on. Remembered for the last few thousand
    instants: the bundles of one claims check share their checks' instants."""
    if value.tzinfo is None:
        raise ValueError("an instant needs a time zone")
    return value.astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def canonical_form(row: ProofRow) -> str:
    """How a snapshot's bytes were made, as the warehouse recorded it (``snapshot_forms``:
    ``rfc8785``, ``receipts-json-v1`` or ``raw``); for a snapshot without a record, receipts'
    canonical JSON v1 for a JSON record and the bytes as served for anything else."""
    if row.canonical_form is not None:
        return row.canonical_form
    return "receipts-json-v1" if is_json_media(row.media_type) else "raw"


def version_url(row: ProofRow) -> str | None:
    """A URL of this exact version, where the upstream has one: a GitHub file at its pinned
    commit. NHTSA and Forem serve only the current record."""
    if row.source != "github" or not row.source_commit:
        return None
    _, owner, name, path = row.doc_id.split("/", 3)
    return web_file_url(f"{owner}/{name}", row.source_commit, path)


def citation(row: ProofRow) -> dict[str, Any]:
    """The upstream URL, the capture instant (when the bytes were fetched, else when the
    revision was recorded) and the Robust Links attributes
    (https://robustlinks.mementoweb.org/spec/) a page citing this version carries."""
    captured = row.captured_at
    return {
        "url": row.source_url,
        "captured_at": captured,
        "robust_links": {
            "data-originalurl": row.source_url,
            "data-versionurl": version_url(row),
            "data-versiondate": captured[:10],
        },
    }


class ClaimCheck(NamedTuple):
    """One check of a claim, as a bundle's ``claim.history`` lists it."""

    check: int
    status: str
    at: datetime | str  # an instant, or its text as :func:`fast_instant` writes it
    revision: int | None
    content_hash: str | None


def _instant_text(at: datetime | str) -> str:
    if isinstance(at, str):
        return at
    return fast_instant(at if at.tzinfo else at.replace(tzinfo=UTC))


def claim_json(
    claim_id: str,
    status: str,
    history: Sequence[tuple[int, str, datetime | str, int | None, str | None]],
) -> dict[str, Any]:
    """A bundle's ``claim``: its id, status and every check (each a :class:`ClaimCheck`, or
    a tuple of the same fields), oldest first."""
    return {
        "id": claim_id,
        "status": status,
        "history": [
            {
                "check": check,
                "status": state,
                "at": _instant_text(at),
                "revision": revision,
                "content_hash": content_hash,
            }
            for check, state, at, revision, content_hash in history
        ],
    }


def build_bundle(
    row: ProofRow,
    quote: str,
    location: Location,
    proof: bytes,
    verifier_key: str,
    claim: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The bundle of ``quote`` at ``location`` in ``row``'s snapshot; ``proof`` is the C2SP
    tlog-proof of ``row.entry`` with its signed checkpoint."""
    snapshot = base64.b64encode(row.body).decode("ascii")
    return _bundle(row, quote, location, snapshot, proof.decode("utf-8"), verifier_key, claim)


def _bundle(
    row: ProofRow,
    quote: str,
    location: Location,
    snapshot_base64: str | orjson.Fragment,
    proof: str | orjson.Fragment,
    verifier_key: str,
    claim: dict[str, Any] | None,
) -> dict[str, Any]:
    if row.entry is None:
        raise ValueError(f"{row.doc_id} revision {row.revision} has no log entry")
    return {
        "format": FORMAT,
        "version": VERSION,
        "document": {
            "doc_id": row.doc_id,
            "revision": row.revision,
            "kind": row.kind,
            "source": row.source,
            "title": None,
        },
        "snapshot": {
            "content_hash": row.content_hash,
            "canonical_form": canonical_form(row),
            "media_type": row.media_type,
            "size": len(row.body),
            "bytes_base64": snapshot_base64,
        },
        "quote": {
            "text": quote,
            "exact": location.exact,
            "locator": {"pointer": location.pointer, "start": location.start, "end": location.end},
            "prefix": location.prefix,
            "suffix": location.suffix,
        },
        "citation": citation(row),
        "log": {
            "entry": row.entry.decode("utf-8"),
            "proof": proof,
            "verifier_key": verifier_key,
        },
        "claim": claim,
    }


class BulkEncoder:
    """Bundles' bytes for many quotes proved against one checkpoint: each the bytes of
    :func:`bundle_bytes` of :func:`build_bundle`, with the parts JSON-encoded once where
    they can be: the checkpoint (a proof is the proof's lines, then the checkpoint's), and a
    snapshot's base64 (its letters need no escape), written into the file as they are."""

    def __init__(self, checkpoint: str, verifier_key: str) -> None:
        self.checkpoint = orjson.dumps(checkpoint)[1:]  # the string's end and closing quote
        self.verifier_key = verifier_key

    def encode(
        self,
        row: ProofRow,
        quote: str,
        location: Location,
        proof: bytes,
        claim: dict[str, Any] | None = None,
    ) -> bytes:
        """``proof``: the tlog-proof's lines without the checkpoint."""
        snapshot = orjson.Fragment(b'"' + base64.b64encode(row.body) + b'"')
        lines = orjson.Fragment(orjson.dumps(proof.decode("utf-8"))[:-1] + self.checkpoint)
        return bundle_bytes(
            _bundle(row, quote, location, snapshot, lines, self.verifier_key, claim)
        )


def bundle_bytes(bundle: dict[str, Any]) -> bytes:
    """The file's bytes: UTF-8 JSON on one line, ending in a line feed (orjson: ~10x the
    standard library's encoder on these; ``jq .`` indents a bundle for reading)."""
    return orjson.dumps(bundle, option=orjson.OPT_APPEND_NEWLINE)
