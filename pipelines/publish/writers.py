"""Writes the push did not make but that happened while it ran, and who made them.

A Sanity Function or a webhook's handler reacting to our mutations writes documents during
the push: a summary patched into the document we just created, an audit record beside it.
It writes through ``@sanity/client`` with a robot token of its own
(https://www.sanity.io/docs/functions/functions-js-client ,
https://www.sanity.io/docs/functions/robot-tokens-with-functions), each write a transaction of
its own: the documents it writes carry *its* transaction id as ``_rev`` (a document's
``_rev`` is the id of the transaction that last wrote it, shared/reference/upstream-apis.md
§1.9), never one of ours, and the History API's transaction log names the transaction's
``author``, the identity of the token that sent it (§1.8; ``@sanity/types``
transactionLog.ts: ``{id, timestamp, author, documentIDs}``).

So after the push the target lists the documents updated since our first transaction
committed whose ``_rev`` is none of ours, and asks the transaction log who wrote each. The
receipt names them, ours (in the namespace: target drift the next plan sees) and unrelated
alike. None of this weakens the guard: a document outside the namespace created during the
push still moves the unrelated count and trips it (exit 4); the writer is added to the
guard's message where Sanity tells us. Pure: rows in, records and text out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SHOWN = 20


@dataclass(frozen=True)
class Write:
    """A document written during the push by a transaction that is not ours."""

    id: str
    transaction: str
    author: str | None  # None: the transaction log did not say (no access, or no line)
    ours: bool  # in the namespace (or a draft / version of ours)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "transaction": self.transaction,
            "author": self.author,
            "ours": self.ours,
        }


def authors(log_lines: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Transaction id → author, from transaction log lines."""
    out: dict[str, str] = {}
    for line in log_lines:
        tx, author = line.get("id"), line.get("author")
        if isinstance(tx, str) and isinstance(author, str) and author:
            out[tx] = author
    return out


def writes(
    documents: Iterable[Mapping[str, Any]],
    by_transaction: Mapping[str, str],
    is_ours: Callable[[str], bool],
) -> list[Write]:
    """The writes of ``documents`` (``_id``, ``_rev``), each with its author where known."""
    out = []
    for doc in documents:
        doc_id, rev = doc.get("_id"), doc.get("_rev")
        if isinstance(doc_id, str) and isinstance(rev, str):
            out.append(Write(doc_id, rev, by_transaction.get(rev), is_ours(doc_id)))
    return sorted(out, key=lambda w: w.id)


def _one(write: Write) -> str:
    who = write.author or "a writer Sanity's transaction log did not name"
    return f"{write.id} by {who} (transaction {write.transaction})"


def describe(found: Sequence[Write], total: int | None = None) -> str:
    """One line: how many documents others wrote during the push, and by whom."""
    total = len(found) if total is None else total
    shown = "; ".join(_one(w) for w in found[:SHOWN])
    more = f" … and {total - min(len(found), SHOWN)} more" if total > min(len(found), SHOWN) else ""
    return f"{total} document(s) written during the push by others: {shown}{more}"


def guard_writers(found: Sequence[Write]) -> str | None:
    """What the guard's message adds: who wrote the unrelated documents, where known."""
    unrelated = [w for w in found if not w.ours]
    if not unrelated:
        return None
    return "written during the push by: " + "; ".join(_one(w) for w in unrelated[:SHOWN])
