"""The transparency log as the command line uses it: typed functions over a
:class:`~warehouse.store.Warehouse` (its origin, its latest checkpoint, a proof, the full
check, publishing tiles), each returning plain values."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from warehouse.errors import NotFound, UsageError
from warehouse.store import Warehouse
from warehouse.tlog import checkpoint as checkpoints
from warehouse.tlog import heads, merkle, note, store, tiles
from warehouse.tlog.check import check_log
from warehouse.tlog.errors import CheckpointError, NoteError
from warehouse.tlog.proof import HEADER, format_proof
from warehouse.tlog.transactions import logged_transaction


def origin(warehouse: Warehouse) -> str:
    return heads.origin(warehouse._con)


def size(warehouse: Warehouse) -> int:
    return store.size(warehouse._con)


def latest_checkpoint(warehouse: Warehouse) -> store.StoredCheckpoint:
    """The latest checkpoint; :class:`NotFound` when the log has none yet."""
    latest = store.latest_checkpoint(warehouse._con)
    if latest is None:
        raise NotFound(
            "the log has no checkpoint yet: a writing run (ingest, backfill) records one"
        )
    return latest


def record_checkpoint(warehouse: Warehouse, signer: note.Signer | None) -> heads.Head:
    """Record the checkpoint of the log as it is now, signed by ``signer`` (if given)."""
    with logged_transaction(warehouse) as con:
        head = heads.record(con, signer, None)
    return head


def append_entries(
    warehouse: Warehouse, doc_ids: Sequence[str], revisions: Sequence[int], data: Sequence[bytes]
) -> tuple[int, int]:
    """Append revision entries given as bytes (in their order) in one transaction, bytes
    stored (no rows to rebuild them from); the log's size before and after. (The writers
    append their own entries with their rows; this is for a log made by hand, as a
    benchmark's.)"""
    table = pa.table(
        {
            "doc_id": pa.array(doc_ids, pa.string()),
            "revision": pa.array(revisions, pa.int32()),
            "entry": pa.array(data, pa.binary()),
            "ord": pa.array(range(len(data)), pa.int64()),
        }
    )
    with logged_transaction(warehouse) as con:
        con.register("_tlog_given", table)
        try:
            return store.append(
                con,
                "SELECT 'revision' AS kind, doc_id, revision, CAST(NULL AS BIGINT) AS push_id, "
                "entry, ord FROM _tlog_given",
                "ord",
            )
        finally:
            con.unregister("_tlog_given")


@dataclass(frozen=True)
class Proof:
    doc_id: str
    revision: int
    index: int
    tree_size: int
    data: bytes  # the C2SP tlog-proof file


def prove(warehouse: Warehouse, doc_id: str, revision: int | None = None) -> Proof:
    """The inclusion proof of ``doc_id``'s revision (the latest logged one by default) against
    the latest checkpoint, as a C2SP tlog-proof file: the entry looked up, O(log n) stored
    hashes read."""
    con = warehouse._con
    found = store.entries_of_revision(con, doc_id, revision)
    if not found:
        which = "" if revision is None else f" revision {revision}"
        raise NotFound(f"{doc_id}{which} has no entry in the log")
    logged = int(found[0].revision or 0)  # entries_of_revision keeps revisions only
    latest = latest_checkpoint(warehouse)
    index = found[0].index
    if index >= latest.size:
        raise NotFound(
            f"{doc_id} revision {logged} (entry {index}) is not yet in a checkpoint (the "
            f"latest covers {latest.size} entries); the next writing run records one"
        )
    hashes = merkle.prove_record(latest.size, index, heads.reader(con))
    return Proof(
        doc_id, logged, index, latest.size, format_proof(index, hashes, latest.note.encode())
    )


@dataclass
class Verification:
    size: int
    checkpoints: int
    origin: str
    latest_size: int | None
    kept_size: int | None = None
    problems: list[dict[str, Any]] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)  # checkpoints refused

    @property
    def messages(self) -> list[str]:
        return [p["message"] for p in self.problems] + self.refusals

    @property
    def ok(self) -> bool:
        return not self.problems and not self.refusals


def verify(
    warehouse: Warehouse, kept: bytes | None = None, verifier: note.Verifier | None = None
) -> Verification:
    """The log rebuilt from the rows (:func:`warehouse.tlog.check.check_log`); with
    ``verifier``, the latest checkpoint must be signed by it; with ``kept`` (a checkpoint an
    outsider kept), the log must extend it."""
    con = warehouse._con
    report = check_log(warehouse)
    log_origin = heads.origin(con)
    latest = store.latest_checkpoint(con)
    result = Verification(
        report.size,
        report.checkpoints,
        log_origin,
        None if latest is None else latest.size,
        problems=report.problems,
    )
    if verifier is not None and latest is not None:
        try:
            checkpoints.open(latest.note.encode(), [verifier], log_origin)
        except (NoteError, CheckpointError) as exc:
            result.refusals.append(f"the latest checkpoint is refused: {exc}")
    if kept is not None:
        result.kept_size = _extends(warehouse, kept, verifier, log_origin, result.refusals)
    return result


def _extends(
    warehouse: Warehouse,
    kept: bytes,
    verifier: note.Verifier | None,
    log_origin: str,
    refusals: list[str],
) -> int | None:
    """Whether the log extends a checkpoint an outsider kept: its origin, its signature (when
    a verifier is given), the tree of its size; the kept checkpoint's size."""
    try:
        if verifier is not None:
            head = checkpoints.open(kept, [verifier], log_origin)
        else:
            text = note.parse(kept)[0] if b"\n\n" in kept else kept.decode()
            head = checkpoints.parse(text, log_origin)
    except (NoteError, CheckpointError, UnicodeDecodeError) as exc:
        refusals.append(f"the kept checkpoint is refused: {exc}")
        return None
    con = warehouse._con
    log_size = store.size(con)
    if head.size > log_size:
        refusals.append(
            f"the kept checkpoint has {head.size} entries; the log now holds {log_size} "
            "(entries were removed)"
        )
        return head.size
    read = heads.reader(con)
    if merkle.tree_hash(head.size, read) != head.root:
        refusals.append(
            f"the log does not extend the kept checkpoint of size {head.size}: entries it "
            "covers were rewritten"
        )
        return head.size
    latest = store.latest_checkpoint(con)
    if latest is not None and latest.size >= head.size:
        try:
            proof = merkle.prove_tree(latest.size, head.size, read)
            merkle.check_tree(proof, latest.size, latest.root, head.size, head.root)
        except merkle.ProofError as exc:
            refusals.append(f"the latest checkpoint does not extend the kept one: {exc}")
    return head.size


@dataclass(frozen=True)
class Published:
    out: Path
    size: int
    previous_size: int
    written: list[str]


def publish(warehouse: Warehouse, out: Path) -> Published:
    """The log up to its latest checkpoint, which must be signed, as C2SP tlog-tiles in
    ``out``: only the tiles and bundles that are new or grew since the last publish there."""
    latest = latest_checkpoint(warehouse)
    if latest.key_name is None:
        raise UsageError(
            f"the latest checkpoint is unsigned; set {heads.ENV_KEY} (receipts log init) and "
            "run a writing command, then publish"
        )
    out.mkdir(parents=True, exist_ok=True)
    old = tiles.published_size(out)
    con = warehouse._con

    def read_entries(start: int, end: int) -> list[bytes]:
        return store.read_entries(con, start, end)

    written = tiles.write_tiles(
        out,
        min(old, latest.size),
        latest.size,
        heads.reader(con),
        read_entries,
        latest.note.encode(),
    )
    return Published(out, latest.size, old, written)


@dataclass(frozen=True)
class SignedHead:
    """The latest checkpoint and the verifier key of the key that signed it."""

    checkpoint: store.StoredCheckpoint
    verifier: note.Verifier


def signed_head(warehouse: Warehouse) -> SignedHead:
    """The latest checkpoint, which must be signed by the key ``RECEIPTS_LOG_KEY`` names (a
    proof anyone can check needs both); :class:`UsageError` saying what to run otherwise."""
    latest = latest_checkpoint(warehouse)
    signer = heads.configured_signer()
    setup = (
        f"make a key once (`receipts log init --key FILE`), set {heads.ENV_KEY}=FILE, and run "
        "a writing command (ingest, refresh) so that it records a signed checkpoint"
    )
    if signer is None:
        raise UsageError(
            f"a proof needs the log's signing key and {heads.ENV_KEY} is not set: " + setup
        )
    if latest.key_name is None:
        raise UsageError(f"the latest checkpoint (size {latest.size}) is unsigned: " + setup)
    try:
        checkpoints.open(latest.note.encode(), [signer.verifier], None)
    except (NoteError, CheckpointError) as exc:
        raise UsageError(
            f"the latest checkpoint is not signed by the key {heads.ENV_KEY} names ({exc}); "
            "run a writing command to record one it signs"
        ) from None
    return SignedHead(latest, signer.verifier)


def prove_indexes(warehouse: Warehouse, indexes: Sequence[int], tree_size: int) -> dict[int, bytes]:
    """The inclusion proofs (C2SP tlog-proof files, without their checkpoint) of entries
    ``indexes`` in the tree of ``tree_size``, with one read of the stored hashes; the
    checkpoint's note is appended by the caller. Each hash is written in base64 once, however
    many proofs share it."""
    paths, hashes = merkle.record_paths(
        tree_size, sorted(set(indexes)), heads.reader(warehouse._con)
    )
    encoded = {r: base64.b64encode(h).decode() for r, h in hashes.items()}
    return {
        n: "\n".join([HEADER, f"index {n}", *[encoded[r] for r in ranges], "", ""]).encode()
        for n, ranges in paths.items()
    }
