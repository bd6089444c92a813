"""Proof bundles (format version 1, /work bundle format: docs/proof-page.md) made from the
primitives the bundle is made of, for the proof page's tests: a snapshot in canonical JSON
(receipts-json-v1) or Markdown, a log entry (warehouse.tlog.entries), a log of several
entries whose Merkle tree gives the inclusion proof (warehouse.tlog.merkle), a checkpoint
signed by an Ed25519 key (warehouse.tlog.checkpoint, note) and the C2SP tlog-proof text
(warehouse.tlog.proof).

:func:`good_bundle` holds at every step; :data:`BAD` makes each kind of bad bundle, with the
status every step must get."""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from warehouse.canonical import canonical_json, content_hash
from warehouse.tlog import checkpoint, merkle
from warehouse.tlog.entries import format_entry
from warehouse.tlog.note import Signer
from warehouse.tlog.proof import format_proof

ORIGIN = "receipts.test/log"
# Fixed seeds: the same bundles every run. OTHER has the log's name but another key.
SIGNER = Signer(ORIGIN, bytes(range(32)))
OTHER = Signer(ORIGIN, bytes(range(1, 33)))
DOC_ID = "nhtsa/complaint/11561420"
SUMMARY = (
    "While driving at 40 mph the brakes failed without warning and the vehicle did not stop "
    "until it hit the curb. The dealer said the brake’s master cylinder was replaced."
)
QUOTE = "the brakes failed without warning"
RECORD = {
    "odiNumber": 11561420,
    "manufacturer": "Honda (American Honda Motor Co.)",
    "crash": True,
    "components": "SERVICE BRAKES",
    "summary": SUMMARY,
    "products": [{"productMake": "HONDA", "productModel": "CR-V", "productYear": "2019"}],
}

Bundle = dict[str, Any]
STEPS = ("format", "snapshot", "quote", "entry", "inclusion", "checkpoint")
OK, FAILED, NOT_RUN = "ok", "failed", "not run"


def entry(doc_id: str, revision: int, digest: str | None, kind: str = "revision") -> bytes:
    """A revision entry of the log, as the warehouse writes it."""
    return format_entry(
        {
            "kind": kind,
            "doc_id": doc_id,
            "document": "complaint",
            "revision": revision,
            "content_hash": digest,
            "reason": None,
            "source_url": "https://api.nhtsa.gov/complaints/complaintsByVehicle?make=honda",
            "source_commit": None,
            "seen_at": datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
            "run": 12,
        }
    )


def filler(count: int, tag: str = "other") -> list[bytes]:
    """Entries of other documents, to make a log of several entries."""
    return [entry(f"nhtsa/complaint/{tag}-{n}", 1, f"{n:064x}") for n in range(count)]


def log_proof(entries: list[bytes], index: int, signer: Signer | None = SIGNER) -> str:
    """The tlog-proof text of ``entries[index]`` in the log of ``entries``, its checkpoint
    signed by ``signer`` (None: unsigned)."""
    appender = merkle.Appender(0, lambda indexes: [])
    stored: list[bytes] = []
    for item in entries:
        stored.extend(h for _, h in appender.append(item))
    hashes = merkle.prove_record(len(entries), index, lambda idx: [stored[i] for i in idx])
    head = checkpoint.Checkpoint(ORIGIN, len(entries), appender.root())
    signed = checkpoint.sign(head, signer) if signer else head.text().encode()
    return format_proof(index, hashes, signed).decode()


def bundle_of(
    data: bytes,
    *,
    media_type: str,
    canonical_form: str,
    pointer: str | None,
    located: str,
    quote: str,
    title: str | None = "Honda CR-V 2019: service brakes",
    doc_id: str = DOC_ID,
    revision: int = 2,
    signer: Signer = SIGNER,
    around: tuple[int, int] = (5, 6),
) -> Bundle:
    """A bundle that holds at every step: ``quote`` found in ``located`` (the string at
    ``pointer`` of the JSON snapshot ``data``, or its whole text), its entry in a log with
    ``around`` entries of other documents before and after it."""
    points = list(located)
    start = next(i for i in range(len(points)) if "".join(points[i:]).startswith(quote))
    end = start + len(quote)
    digest = content_hash(data)
    own = entry(doc_id, revision, digest)
    before, after = around
    entries = [*filler(before), own, *filler(after, "later")]
    return {
        "format": "receipts-proof-bundle",
        "version": 1,
        "document": {
            "doc_id": doc_id,
            "revision": revision,
            "kind": "complaint",
            "source": "nhtsa",
            "title": title,
        },
        "snapshot": {
            "content_hash": digest,
            "canonical_form": canonical_form,
            "media_type": media_type,
            "size": len(data),
            "bytes_base64": base64.b64encode(data).decode(),
        },
        "quote": {
            "text": quote,
            "exact": "".join(points[start:end]),
            "locator": {"pointer": pointer, "start": start, "end": end},
            "prefix": "".join(points[max(0, start - 80) : start]),
            "suffix": "".join(points[end : end + 80]),
        },
        "citation": {
            "url": "https://api.nhtsa.gov/complaints/complaintsByVehicle?make=honda",
            "captured_at": "2026-01-02T03:04:05.123456Z",
            "robust_links": {
                "data-originalurl": "https://api.nhtsa.gov/complaints/complaintsByVehicle",
                "data-versionurl": "https://web.archive.org/web/20260102030405/https://api.nhtsa.gov/complaints/complaintsByVehicle",
                "data-versiondate": "2026-01-02",
            },
        },
        "log": {
            "entry": own.decode(),
            "proof": log_proof(entries, before, signer),
            "verifier_key": str(signer.verifier),
        },
        "claim": {
            "id": "claim-brakes",
            "status": "holds",
            "history": [
                {
                    "check": n,
                    "status": "holds",
                    "at": f"2026-01-0{n}T00:00:00.000000Z",
                    "revision": revision,
                    "content_hash": digest,
                }
                for n in (1, 2, 3)
            ],
        },
    }


def good_bundle(record: dict[str, Any] | None = None, quote: str = QUOTE, **kw: Any) -> Bundle:
    """A bundle of a JSON record (canonical JSON v1) quoting its ``/summary``."""
    record = RECORD if record is None else record
    return bundle_of(
        canonical_json(record),
        media_type="application/json",
        canonical_form="receipts-json-v1",
        pointer="/summary",
        located=record["summary"],
        quote=quote,
        **kw,
    )


def markdown_bundle() -> Bundle:
    """A bundle of a Markdown file, located in its whole text (no pointer)."""
    text = "# Brakes\n\nNon-ASCII first: 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 — then the quote: the brakes failed.\n"
    return bundle_of(
        text.encode(),
        media_type="text/markdown",
        canonical_form="raw",
        pointer=None,
        located=text,
        quote="the brakes failed",
    )


def normalised_bundle() -> Bundle:
    """A bundle whose claim writes the words otherwise (case, quotes, spaces, dashes): the
    normalisation of step 3 makes them the same."""
    bundle = good_bundle(quote="brake’s master cylinder")
    bundle["quote"]["text"] = "  Brake's\u00a0\u2003MASTER\ncylinder "
    return bundle


# ---- the bad kinds ------------------------------------------------------------------------


def _tampered(b: Bundle) -> None:
    data = bytearray(base64.b64decode(b["snapshot"]["bytes_base64"]))
    data[data.index(b"failed")] = ord("F")  # same size, other bytes
    b["snapshot"]["bytes_base64"] = base64.b64encode(bytes(data)).decode()


def _wrong_quote(b: Bundle) -> None:
    b["quote"]["text"] = b["quote"]["exact"] = "the brakes worked perfectly"


def _claim_differs(b: Bundle) -> None:
    b["quote"]["text"] = "the steering failed without warning"


def _another_tree(b: Bundle) -> None:
    # A well-signed proof of the same index in another log: it does not hold this entry.
    b["log"]["proof"] = log_proof(filler(12, "elsewhere"), 5)


def _another_key(b: Bundle) -> None:
    entries = [*filler(5), b["log"]["entry"].encode(), *filler(6, "later")]
    b["log"]["proof"] = log_proof(entries, 5, OTHER)


def _unsigned(b: Bundle) -> None:
    entries = [*filler(5), b["log"]["entry"].encode(), *filler(6, "later")]
    b["log"]["proof"] = log_proof(entries, 5, None)


def _version_2(b: Bundle) -> None:
    b["version"] = 2


def _another_document(b: Bundle) -> None:
    # The entry of another document, in the log and proved: only step 4 can tell.
    other = entry("nhtsa/complaint/99999999", 2, b["snapshot"]["content_hash"])
    entries = [*filler(5), other, *filler(6, "later")]
    b["log"]["entry"] = other.decode()
    b["log"]["proof"] = log_proof(entries, 5)


def _altered_checkpoint(b: Bundle) -> None:
    # The signature is the log's, the tree size in the signed text is not.
    proof = b["log"]["proof"]
    head, _, note = proof.partition("\n\n")
    origin, size, rest = note.split("\n", 2)
    b["log"]["proof"] = f"{head}\n\n{origin}\n{int(size) + 1}\n{rest}"


def _statuses(**failed: str) -> tuple[str, ...]:
    return tuple(failed.get(step, OK) for step in STEPS)


# name -> (how the good bundle is spoiled, the status of each step in STEPS order)
BAD: dict[str, tuple[Callable[[Bundle], None], tuple[str, ...]]] = {
    "tampered-bytes": (_tampered, _statuses(snapshot=FAILED, quote=NOT_RUN)),
    "wrong-quote": (_wrong_quote, _statuses(quote=FAILED)),
    "claim-differs": (_claim_differs, _statuses(quote=FAILED)),
    "another-tree": (_another_tree, _statuses(inclusion=FAILED)),
    "another-key": (_another_key, _statuses(checkpoint=FAILED)),
    "unsigned": (_unsigned, _statuses(checkpoint=FAILED)),
    "altered-checkpoint": (_altered_checkpoint, _statuses(checkpoint=FAILED)),
    "version-2": (_version_2, (FAILED, *[NOT_RUN] * 5)),
    "another-document": (_another_document, _statuses(entry=FAILED)),
}
# What each bad bundle's failed step must say (a fragment of its reason).
REASONS = {
    "tampered-bytes": "not the content hash",
    "wrong-quote": "not the quote's exact words",
    "claim-differs": "after normalisation",
    "another-tree": "does not lead to the root",
    "another-key": "is not signed by",
    "unsigned": "the checkpoint is not signed",
    "altered-checkpoint": "does not verify",
    "version-2": "version 2 is not supported",
    "another-document": "nhtsa/complaint/99999999",
    "truncated": "not JSON",
}
TRUNCATED_STATUSES = (FAILED, *[NOT_RUN] * 5)


def bad_bundle(name: str) -> Bundle:
    spoil, _ = BAD[name]
    bundle = copy.deepcopy(good_bundle())
    spoil(bundle)
    return bundle


def truncated_text() -> str:
    """A bundle file cut short: not JSON any more."""
    text = json.dumps(good_bundle(), indent=1)
    return text[: len(text) // 2]


HOSTILE_SCRIPT = "<script>window.__pwned = 1</script>"
HOSTILE = (
    f"</script>{HOSTILE_SCRIPT}<!--<script>"
    '<img src=x onerror="window.__pwned = 2">'
    "\u202eevil\u202c &amp; \u2028 ]]> {{ 7*7 }}"
)


def hostile_bundle() -> Bundle:
    """A bundle that holds, whose upstream text (the record, the quote, the title, the
    document id) is markup and script: the page must show it as text and run none of it."""
    record = dict(RECORD, summary=f"Before. {HOSTILE} After.", components=HOSTILE)
    record[HOSTILE] = HOSTILE  # a key too
    bundle = good_bundle(
        record, quote=HOSTILE, title=f"{HOSTILE} title", doc_id=f"nhtsa/complaint/{HOSTILE}"
    )
    bundle["claim"]["id"] = bundle["citation"]["url"] = HOSTILE
    bundle["citation"]["robust_links"]["data-versionurl"] = "javascript:window.__pwned = 3"
    return bundle
