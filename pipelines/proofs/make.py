"""Proof bundles from a warehouse: one for a quote (``receipts prove``), or one per claim
that holds (``receipts verify-claims --bundles``), every proof against the latest signed
checkpoint."""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.checks.claims import ClaimVerdict
from pipelines.checks.quote import find_quote, short_hash
from pipelines.proofs.bundle import SUFFIX, BulkEncoder, build_bundle, claim_json
from pipelines.proofs.files import write_all
from pipelines.proofs.locate import Location, locate
from warehouse import history
from warehouse.claims import status_histories
from warehouse.errors import BundleRefused, NotFound
from warehouse.proof_rows import ProofRow, proof_rows
from warehouse.store import Warehouse
from warehouse.tlog import log as tlog

NO_SPAN = (
    "the quote holds under receipts' reading rules, but no span of the stored text reads as it "
    "under the bundle's normalisation (it crosses Markdown or HTML markup, or invisible "
    "characters): quote the words as they are stored"
)


def _provable(row: ProofRow, size: int) -> int:
    """The log index of ``row``'s entry, which the checkpoint of ``size`` entries covers;
    :class:`NotFound` when it has none, or the checkpoint does not cover it yet."""
    if row.log_index is None:
        raise NotFound(f"{row.doc_id} revision {row.revision} has no entry in the log")
    if row.log_index >= size:
        raise NotFound(
            f"{row.doc_id} revision {row.revision} (entry {row.log_index}) is not yet in a "
            f"checkpoint (the latest covers {size} entries); the next writing run records one"
        )
    return row.log_index


def prove(
    wh: Warehouse,
    doc_id: str,
    quote: str,
    revision: int | None = None,
    content_hash: str | None = None,
) -> dict[str, Any]:
    """The bundle of ``quote`` in ``doc_id``'s revision (the current one unless ``revision``
    or ``content_hash`` names one). Refuses (:class:`BundleRefused`) a quote the revision
    does not hold, or one with no span the bundle's normalisation finds."""
    head = tlog.signed_head(wh)
    snapshot = history.snapshot(wh, doc_id, revision, content_hash)
    where = f"{doc_id} revision {snapshot.revision} (hash {short_hash(snapshot.content_hash)})"
    if find_quote(quote, snapshot.body, snapshot.media_type) is None:
        raise BundleRefused(
            f"the quote does not occur in {where}; `receipts verify-quote` says which "
            "revisions hold it"
        )
    location = locate(quote, snapshot.body, snapshot.media_type)
    if location is None:
        raise BundleRefused(f"{where}: {NO_SPAN}")
    row = proof_rows(wh, [(doc_id, snapshot.revision)])[(doc_id, snapshot.revision)]
    index = _provable(row, head.checkpoint.size)
    proof = tlog.prove_indexes(wh, [index], head.checkpoint.size)[index]
    proof += head.checkpoint.note.encode()
    return build_bundle(row, quote, location, proof, str(head.verifier))


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def bundle_name(claim_id: str) -> str:
    """A claim's bundle file name: its id with every character but letters, digits, ``.``,
    ``_`` and ``-`` written ``%XX`` (so no two ids share a name), then ``.receipt.json``."""
    safe = _UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), claim_id)
    if safe.startswith("."):
        safe = "%2E" + safe[1:]
    return safe + SUFFIX


@dataclass
class ClaimBundles:
    """The bundle of every holding claim (file name, bytes), and the holding claims that
    have none, with the reason."""

    files: list[tuple[str, bytes]] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # claim id -> reason


def _holding(verdicts: Sequence[ClaimVerdict]) -> dict[str, ClaimVerdict]:
    """The claims that hold, by their bundle's file name."""
    return {
        bundle_name(v.claim.claim_id): v
        for v in verdicts
        if v.holds and v.cited_revision is not None
    }


def _claim_files(
    wh: Warehouse, named: dict[str, ClaimVerdict], result: ClaimBundles
) -> Iterator[tuple[str, bytes]]:
    """Each holding claim's bundle (file name, bytes), as it is built (``named``: the
    holding claims by file name, :func:`_holding`); the claims refused go
    into ``result.refused``, the files into ``result.files``. Rows and bytes come from one
    query, every inclusion proof from one read of the hashes, every status history from
    another, all before the first bundle: from there each claim's quote is located (once in
    each snapshot, however many claims cite it there) and its bundle built and handed on,
    so the files are written while the rest are built. A located quote in a revision the
    checkpoint does not cover refuses them all (:class:`NotFound`) before the first."""
    head = tlog.signed_head(wh)
    size = head.checkpoint.size
    holding = list(named.values())
    rows = proof_rows(wh, [(v.claim.doc_id, int(v.cited_revision or 0)) for v in holding])
    places: dict[tuple[str, int, str], Location | None] = {}

    def located(verdict: ClaimVerdict) -> tuple[ProofRow, Location] | None:
        key = (verdict.claim.doc_id, int(verdict.cited_revision or 0), verdict.claim.quote)
        row = rows.get(key[:2])
        if row is not None and key not in places:
            places[key] = locate(verdict.claim.quote, row.body, row.media_type)
        location = places.get(key)
        return None if row is None or location is None else (row, location)

    covered = {r.log_index for r in rows.values() if r.log_index is not None and r.log_index < size}
    for verdict in holding:
        row = rows.get((verdict.claim.doc_id, int(verdict.cited_revision or 0)))
        if row is not None and row.log_index not in covered and located(verdict) is not None:
            _provable(row, size)  # raises
    proofs = tlog.prove_indexes(wh, sorted(covered), size)
    histories = status_histories(wh, [v.claim.claim_id for v in holding])
    encoder = BulkEncoder(head.checkpoint.note, str(head.verifier))
    for name, verdict in named.items():
        claim_id = verdict.claim.claim_id
        found = located(verdict)
        if found is None:
            result.refused[claim_id] = NO_SPAN
            continue
        row, location = found
        made = (
            name,
            encoder.encode(
                row,
                verdict.claim.quote,
                location,
                proofs[row.log_index or 0],
                claim_json(claim_id, verdict.status, histories.get(claim_id, [])),
            ),
        )
        result.files.append(made)
        yield made


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while bundles are built: the bulk build makes some
    millions of short-lived objects and no cycle, and the collections their allocations set
    off cost a fifth of its time (measured on 10,000 bundles)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def claim_bundles(wh: Warehouse, verdicts: Sequence[ClaimVerdict]) -> ClaimBundles:
    """One bundle per claim that holds, named after the claim, with the claim's status
    history; a claim whose quote has no span the bundle's normalisation finds is refused."""
    result = ClaimBundles()
    with _collector_paused():
        for _ in _claim_files(wh, _holding(verdicts), result):
            pass
    return result


def write_claim_bundles(wh: Warehouse, verdicts: Sequence[ClaimVerdict], out: Path) -> ClaimBundles:
    """:func:`claim_bundles`, each file written whole into ``out`` (made if need be) as it
    is built (:mod:`pipelines.proofs.files` says what survives a crash)."""
    result = ClaimBundles()
    with _collector_paused():
        named = _holding(verdicts)
        write_all(out, _claim_files(wh, named, result), named.keys())
    return result
