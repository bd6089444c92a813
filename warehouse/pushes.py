"""The push ledger: a 'started' row, a row per transaction sent, then a 'finished' row.

Nothing is updated. A push that dies half-way keeps its 'started' row and the rows of the
batches that committed; ``push_summary`` shows it as unfinished with what it applied.

Transactions that committed after the client died (or whose answer was lost) have no
'committed' row. Their ids name their push (``rcpt-<push>-<key>-<batch>-<digest>``) and
Sanity stamps them on the documents as ``_rev``, so the next push finds them
(``unrecorded_transactions``) and appends a 'reconciled' row to the push that sent them
(``record_reconciled``); from then on they count among ``our_transaction_ids``.

``<key>`` (``push_key``) is a digest of the push's number and the instant its 'started' row
was written. A warehouse restored from a backup numbers its next push as an earlier one that
the backup never saw; the key tells them apart, so their transaction ids never collide
(Sanity refuses a transaction id used before: it "must be unique in the dataset",
https://www.sanity.io/docs/http-mutations) and a ``_rev`` left by the push the backup never
saw is not taken for one of ours. Ids of the older shape ``rcpt-<push>-<batch>-<digest>``
(no key) are still read.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from warehouse.asof import utc_iso
from warehouse.clock import now
from warehouse.history import json_or_none
from warehouse.store import Warehouse
from warehouse.tlog.appends import append_push
from warehouse.tlog.heads import Head, record_head
from warehouse.tlog.transactions import logged_transaction


@dataclass(frozen=True)
class Receipt:
    """What a push proves about everything it does not own."""

    unrelated_before: int | None
    unrelated_after: int | None
    touched_by_us: int | None


# The shape of the transaction ids our pushes send (pipelines.publish.transactions.transaction_id).
# Groups: the push, its key (None in the older shape, which had none), the batch.
TRANSACTION_ID_RE = re.compile(
    r"^rcpt-([1-9][0-9]*)-(?:([0-9a-f]{8})-)?([1-9][0-9]*)-[0-9a-f]{16}\Z"
)
PUSH_KEY_HEX = 8
APPLIED_STATUSES = ("committed", "reconciled")


def _dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True)


def start_push(
    warehouse: Warehouse,
    *,
    target: str,
    namespace: str,
    manifest_name: str | None,
    run_id: int | None,
    plan_counts: dict[str, int],
    unrelated_before: int | None,
) -> int:
    """Append a push's 'started' row and return its id (the next integer, allocated under the
    warehouse's id lock so that two writers of a lake never take the same one)."""
    with warehouse.serial("ids:pushes"), warehouse._transaction() as con:
        push_id = int(warehouse._scalar("SELECT coalesce(max(push_id), 0) + 1 FROM pushes"))
        con.execute(
            "INSERT INTO pushes (push_id, event, recorded_at, target, namespace, manifest_name, "
            "run_id, plan_counts, unrelated_before, status) "
            "VALUES ($id, 'started', $at, $target, $ns, $name, $run, $counts, $before, 'running')",
            {
                "id": push_id,
                "at": now(),
                "target": target,
                "ns": namespace,
                "name": manifest_name,
                "run": run_id,
                "counts": _dump(plan_counts),
                "before": unrelated_before,
            },
        )
    return push_id


def push_key(warehouse: Warehouse, push_id: int) -> str | None:
    """The key of push ``push_id`` in its transaction ids: a digest of its number and the
    microsecond its 'started' row was written; None when the ledger has no such push."""
    row = warehouse._first_row(
        "SELECT epoch_us(recorded_at) FROM pushes WHERE push_id = $id AND event = 'started'",
        {"id": push_id},
    )
    if row is None:
        return None
    return hashlib.sha256(f"{push_id}:{int(row[0])}".encode()).hexdigest()[:PUSH_KEY_HEX]


def record_batch(warehouse: Warehouse, push_id: int, batch: Mapping[str, Any]) -> None:
    """Append the outcome of one transaction: ``batch_no``, ``transaction_id``,
    ``mutations``, ``bytes``, ``status`` (``committed``, ``conflict`` or ``failed``) and
    ``message``."""
    with warehouse._transaction() as con:
        con.execute(
            "INSERT INTO push_batches VALUES ($id, $batch_no, $at, $transaction_id, $mutations, "
            "$bytes, $status, $message)",
            {"id": push_id, "at": now(), **batch},
        )


def finish_push(
    warehouse: Warehouse,
    push_id: int,
    *,
    status: str,
    applied: int,
    transaction_ids: list[str],
    receipt: Receipt,
    conflicts: list[dict[str, Any]],
    notices: list[str],
    message: str | None,
) -> Head | None:
    """Append a push's 'finished' row with its receipt, and its entry in the transparency
    log; the log's checkpoint (:func:`warehouse.tlog.heads.record_head`)."""
    with logged_transaction(warehouse) as con:
        con.execute(
            "INSERT INTO pushes (push_id, event, recorded_at, target, namespace, manifest_name, "
            "run_id, applied, transaction_ids, unrelated_before, unrelated_after, touched_by_us, "
            "status, message, conflicts, notices) "
            "SELECT push_id, 'finished', $at, target, namespace, manifest_name, run_id, $applied, "
            "$txids, unrelated_before, $after, $touched, $status, $msg, $conflicts, $notices "
            "FROM pushes WHERE push_id = $id AND event = 'started' AND NOT EXISTS "
            "(SELECT 1 FROM pushes WHERE push_id = $id AND event = 'finished')",
            {
                "id": push_id,
                "at": now(),
                "applied": applied,
                "txids": _dump(transaction_ids),
                "after": receipt.unrelated_after,
                "touched": receipt.touched_by_us,
                "status": status,
                "msg": message,
                "conflicts": _dump(conflicts),
                "notices": _dump(notices),
            },
        )
        append_push(con, push_id)
        return record_head(con, None, notice=logging.INFO)  # the run that pushes says it


def pushes(warehouse: Warehouse, limit: int | None = None) -> list[dict[str, Any]]:
    """The push ledger, newest first."""
    sql = (
        "SELECT push_id, target, namespace, manifest_name, run_id, plan_counts, started_at, "
        "finished_at, status, message, applied, transaction_ids, unrelated_before, "
        "unrelated_after, touched_by_us, conflicts, notices FROM push_summary "
        "ORDER BY push_id DESC"
    )
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    out = []
    for row in warehouse._con.execute(sql).fetchall():
        out.append(
            {
                "push_id": int(row[0]),
                "target": row[1],
                "namespace": row[2],
                "manifest": row[3],
                "run_id": row[4],
                "plan": json_or_none(row[5]) or {},
                "started_at": utc_iso(row[6]),
                "finished_at": utc_iso(row[7]),
                # One writer at a time: a push without a 'finished' row was interrupted.
                "status": "interrupted" if row[8] == "unfinished" else row[8],
                "message": row[9],
                "applied": int(row[10]),
                "transaction_ids": json_or_none(row[11]) or [],
                "unrelated_before": row[12],
                "unrelated_after": row[13],
                "touched_by_us": row[14],
                "conflicts": json_or_none(row[15]) or [],
                "notices": json_or_none(row[16]) or [],
            }
        )
    return out


class LastPush(NamedTuple):
    push_id: int
    run_id: int  # the run whose corpus it published; 0 when it names none


def last_ok_push(warehouse: Warehouse, target: str, namespace: str) -> LastPush | None:
    """The newest push to ``target`` and ``namespace`` that finished ok, if any."""
    row = warehouse._first_row(
        "SELECT push_id, coalesce(run_id, 0) FROM push_summary WHERE target = $t "
        "AND namespace = $ns AND status = 'ok' ORDER BY push_id DESC LIMIT 1",
        {"t": target, "ns": namespace},
    )
    return None if row is None else LastPush(int(row[0]), int(row[1]))


class OtherCorpus(NamedTuple):
    """A corpus other than ours that pushed to the same target: its manifest name, the
    namespace it pushed to, and its newest push there."""

    manifest_name: str
    namespace: str
    push_id: int


# A corpus's claim on a namespace of a target is its pushes there (but refused ones: they
# sent nothing; an interrupted one may have committed, so it counts), unless it handed the
# namespace over (a 'handover' row: see record_handover) at or after its last push there.
_OTHER_CORPORA = """
WITH claims AS (
    SELECT manifest_name, namespace, max(push_id) AS last_push
    FROM push_summary
    WHERE target = $t AND manifest_name IS NOT NULL AND manifest_name IS DISTINCT FROM $name
      AND status <> 'refused'
    GROUP BY manifest_name, namespace
)
SELECT c.manifest_name, c.namespace, c.last_push
FROM claims c
WHERE NOT EXISTS (
    SELECT 1 FROM pushes h
    WHERE h.event = 'handover' AND h.target = $t AND h.namespace = c.namespace
      AND h.manifest_name = c.manifest_name AND h.push_id >= c.last_push
)
ORDER BY c.namespace, c.manifest_name
"""


def other_corpora(
    warehouse: Warehouse, target: str, manifest_name: str | None
) -> list[OtherCorpus]:
    """Every (corpus, namespace) the ledger shows publishing to ``target`` under another
    manifest name than ``manifest_name`` (see :data:`_OTHER_CORPORA`)."""
    rows = warehouse._con.execute(_OTHER_CORPORA, {"t": target, "name": manifest_name}).fetchall()
    return [OtherCorpus(str(r[0]), str(r[1]), int(r[2])) for r in rows]


def record_handover(
    warehouse: Warehouse, push_id: int, target: str, namespace: str, from_manifest: str
) -> None:
    """Record that the corpus ``from_manifest`` handed ``namespace`` of ``target`` over to
    the corpus of push ``push_id`` (a renamed corpus taking over its old name's namespace):
    a row of event ``handover`` beside that push's, naming the corpus that let go. Its
    pushes up to this one claim the namespace no more; a later push of it claims it again."""
    with warehouse._transaction() as con:
        con.execute(
            "INSERT INTO pushes (push_id, event, recorded_at, target, namespace, manifest_name) "
            "VALUES ($id, 'handover', $at, $target, $ns, $name)",
            {"id": push_id, "at": now(), "target": target, "ns": namespace,
             "name": from_manifest},
        )  # fmt: skip


def our_transaction_ids(warehouse: Warehouse, target: str, namespace: str) -> frozenset[str]:
    """The ids of every transaction our pushes to ``target`` and ``namespace`` committed,
    as recorded when it was sent or by reconciliation afterwards."""
    rows = warehouse._con.execute(
        "SELECT b.transaction_id FROM push_batches b JOIN pushes p ON p.push_id = b.push_id "
        "AND p.event = 'started' WHERE b.status IN ('committed', 'reconciled') "
        "AND p.target = $t AND p.namespace = $ns",
        {"t": target, "ns": namespace},
    ).fetchall()
    return frozenset(str(r[0]) for r in rows)


def unrecorded_transactions(
    warehouse: Warehouse, target: str, namespace: str, revisions: Iterable[str | None]
) -> frozenset[str]:
    """Of the ``_rev``\\ s read from the target, those that are transaction ids of a push
    of ours to ``target`` and ``namespace`` with no committed or reconciled row: they
    committed after the push died, or after their answer was lost."""
    candidates: dict[str, tuple[int, str | None]] = {}
    for rev in revisions:
        match = TRANSACTION_ID_RE.match(rev or "")
        if match:
            candidates[str(rev)] = (int(match[1]), match[2])
    if not candidates:
        return frozenset()
    rows = warehouse._con.execute(
        "SELECT push_id FROM pushes WHERE event = 'started' AND target = $t AND namespace = $ns",
        {"t": target, "ns": namespace},
    ).fetchall()
    pushes_of_ours = {int(r[0]) for r in rows}
    recorded = our_transaction_ids(warehouse, target, namespace)
    keys: dict[int, str | None] = {}

    def ours(push_id: int, key: str | None) -> bool:
        if push_id not in pushes_of_ours:
            return False
        if key is None:  # the older shape, from before pushes had keys
            return True
        if push_id not in keys:
            keys[push_id] = push_key(warehouse, push_id)
        return keys[push_id] == key

    return frozenset(
        tx for tx, (push_id, key) in candidates.items() if tx not in recorded and ours(push_id, key)
    )


def record_reconciled(
    warehouse: Warehouse, documents: Mapping[str, int], by_push: int | None
) -> None:
    """Append a 'reconciled' row, to the push that sent it, for each transaction in
    ``documents`` (transaction id → how many documents carry it as ``_rev``)."""
    with warehouse._transaction() as con:
        for tx, count in sorted(documents.items()):
            match = TRANSACTION_ID_RE.match(tx)
            if match is None:
                continue
            found = f"push {by_push}" if by_push is not None else "a later push"
            con.execute(
                "INSERT INTO push_batches VALUES ($id, $batch_no, $at, $tx, $mutations, 0, "
                "'reconciled', $message)",
                {
                    "id": int(match[1]),
                    "batch_no": int(match[3]),
                    "at": now(),
                    "tx": tx,
                    "mutations": count,
                    "message": f"committed without being recorded; {found} found it as the "
                    f"_rev of {count} document(s)",
                },
            )


def batches(warehouse: Warehouse, push_id: int) -> list[dict[str, Any]]:
    """The transactions one push sent, in order."""
    rows = warehouse._con.execute(
        "SELECT batch_no, transaction_id, mutations, bytes, status, message, recorded_at "
        "FROM push_batches WHERE push_id = $id ORDER BY batch_no",
        {"id": push_id},
    ).fetchall()
    return [
        {
            "batch_no": r[0],
            "transaction_id": r[1],
            "mutations": r[2],
            "bytes": r[3],
            "status": r[4],
            "message": r[5],
            "recorded_at": utc_iso(r[6]),
        }
        for r in rows
    ]
