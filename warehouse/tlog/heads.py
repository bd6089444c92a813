"""The log's checkpoints as the warehouse records them: at the end of every writing run (and
push), the tree's size and root as a C2SP tlog-checkpoint, signed with the Ed25519 key named
by ``RECEIPTS_LOG_KEY`` (a key file made by ``receipts log init``) when it is set, else
recorded unsigned (the checkpoint text alone) with one line on stderr saying so.

The checkpoint's origin is ``RECEIPTS_LOG_ORIGIN`` when set, else the warehouse's own,
``receipts/<id>``, made when the log was made and kept in ``warehouse_meta``.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb

from warehouse import settings
from warehouse.clock import now
from warehouse.tlog import checkpoint as checkpoints
from warehouse.tlog import merkle, note, store
from warehouse.tlog.errors import LogError
from warehouse.tlog.keys import load_key_file

ENV_KEY = "RECEIPTS_LOG_KEY"
ORIGIN_META = "log_origin"

log = logging.getLogger("receipts.log")


def record_origin(con: duckdb.DuckDBPyConnection) -> None:
    """Give a warehouse its log's origin (when migration 0009 makes the log):
    ``receipts/`` and 16 hex digits of the SHA-256 of the instant it was made (a function
    of the clock, so a replayed demo makes the same one)."""
    at = now()
    digest = hashlib.sha256(f"receipts log {at.isoformat()}".encode()).hexdigest()[:16]
    con.execute(
        "INSERT INTO warehouse_meta SELECT $k, $v, $at WHERE NOT EXISTS "
        "(SELECT 1 FROM warehouse_meta WHERE key = $k)",
        {"k": ORIGIN_META, "v": f"receipts/{digest}", "at": at},
    )


def origin(con: duckdb.DuckDBPyConnection) -> str:
    """The origin line of this warehouse's checkpoints."""
    configured = settings.current().log_origin
    if configured:
        return configured
    row = con.execute(
        "SELECT arg_max(value, recorded_at) FROM warehouse_meta WHERE key = $k",
        {"k": ORIGIN_META},
    ).fetchall()
    return str(row[0][0]) if row and row[0][0] else "receipts/unnamed"


def configured_signer() -> note.Signer | None:
    """The key ``RECEIPTS_LOG_KEY`` names, if set (a :class:`KeyFileError` if unusable)."""
    path = settings.current().log_key
    return load_key_file(Path(path)) if path else None


def reader(con: duckdb.DuckDBPyConnection) -> merkle.HashReader:
    def read(indexes: object) -> list[bytes]:
        return store.read_hashes(con, list(indexes))  # type: ignore[call-overload]

    return read


@dataclass(frozen=True)
class Head:
    size: int
    root: bytes
    origin: str
    note: str
    key_name: str | None
    # Why it is unsigned (None when signed).
    unsigned_because: str | None = None
    # Whether this run recorded it (False: the log did not grow, this is the latest one).
    recorded: bool = True

    @property
    def signed(self) -> bool:
        return self.key_name is not None

    def as_json(self) -> dict[str, object]:
        """What a writing command's ``--json`` says of the log's checkpoint (``log_checkpoint``:
        the same shape for every command)."""
        return {
            "size": self.size,
            "origin": self.origin,
            "signed": self.signed,
            "key_name": self.key_name,
            "unsigned_because": self.unsigned_because,
            "recorded": self.recorded,
        }


_NO_KEY = f"{ENV_KEY} is not set"


def current_head(con: duckdb.DuckDBPyConnection, signer: note.Signer | None) -> Head:
    """The checkpoint of the log as it is, signed by ``signer`` if given."""
    size = store.size(con)
    root = merkle.tree_hash(size, reader(con))
    head = checkpoints.Checkpoint(origin(con), size, root)
    text = head.text() if signer is None else checkpoints.sign(head, signer).decode()
    return Head(size, root, head.origin, text, None if signer is None else signer.name)


def record(con: duckdb.DuckDBPyConnection, signer: note.Signer | None, run_id: int | None) -> Head:
    """Record the checkpoint of the log as it is, signed by ``signer`` if given."""
    head = current_head(con, signer)
    store.record_checkpoint(
        con,
        tree_size=head.size,
        root=head.root,
        note=head.note,
        key_name=head.key_name,
        run_id=run_id,
        at=now(),
    )
    return head


def record_head(
    con: duckdb.DuckDBPyConnection, run_id: int | None, notice: int = logging.WARNING
) -> Head | None:
    """Record the checkpoint of the log at the end of a writing run (inside its last
    transaction), unless the latest one has the same size (that one is returned, with
    ``recorded`` false); say so (a line at level ``notice``) when it is unsigned. None
    for a warehouse without the log."""
    if not store.has_log(con):
        return None
    latest = store.latest_checkpoint(con)
    if latest is not None and latest.size == store.size(con):
        because = None if latest.key_name else "recorded unsigned by an earlier run"
        named = latest.note.split("\n", 1)[0]  # the origin line it was recorded under
        return Head(latest.size, latest.root, named, latest.note, latest.key_name, because, False)
    try:
        signer = configured_signer()
    except LogError as exc:  # the run's rows are committed with this; it must not fail them
        log.warning("log: cannot sign the checkpoint: %s; it is recorded unsigned", exc)
        return replace(record(con, None, run_id), unsigned_because=f"cannot sign: {exc}")
    head = record(con, signer, run_id)
    if signer is None:
        head = replace(head, unsigned_because=_NO_KEY)
        log.log(
            notice,
            "log: checkpoint of %s entries is unsigned (set %s to a key file made by "
            "`receipts log init`)",
            f"{head.size:,}",
            ENV_KEY,
        )
    return head
