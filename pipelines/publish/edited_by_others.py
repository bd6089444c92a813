"""Unrelated documents another writer edited while a push ran: information, never a trip of
the guard.

The guard compares counts of unrelated documents and looks for our transaction ids on them,
so an edit by someone else to an unrelated document during the push leaves
``before 1, after 1`` and goes unmentioned. Sanity sets ``_updatedAt`` on every change
[DOC https://sanity.io/learn/course/refactoring-content/setting-created-and-modified-dates],
and GROQ's ``now()`` is the server's time at the query [DOC
https://www.sanity.io/docs/groq-functions], so the push reads the target's clock before its
first transaction and, after its last, counts (and names, up to a limit) the unrelated
documents whose ``_updatedAt`` is at or after it and whose ``_rev`` is none of its own
transactions. Comparing the target's own times keeps a skewed local clock out of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipelines.publish.result import PushResult


def note_edited_by_others(result: PushResult, count: int, ids: Sequence[str]) -> None:
    """Record the count and the ids on the result, and a notice (the ledger keeps notices)."""
    result.edited_by_others, result.edited_by_others_ids = count, list(ids)
    if count:
        shown = ", ".join(ids) + (" …" if count > len(ids) else "")
        result.notices.append(
            f"{count} unrelated document(s) were edited by another writer during the push "
            f"(not by this push; the guard does not count them): {shown}"
        )
