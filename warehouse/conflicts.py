"""Writing a batch again when its commit conflicted with another writer of a lake."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from warehouse.errors import WarehouseError
from warehouse.store import Warehouse

T = TypeVar("T")

# How many times one batch is written again after its commit conflicted with another writer.
CONFLICT_RETRIES = 10


def retrying_conflicts(
    warehouse: Warehouse,
    what: str,
    attempt: Callable[[], T],
    on_retry: Callable[[], None] | None = None,
) -> T:
    """``attempt()`` (one transaction), run again while its commit conflicts with another
    writer of a lake (the whole batch, classified anew against what the other committed):
    at most :data:`CONFLICT_RETRIES` times, with a short random backoff; ``on_retry`` is
    told of each. A DuckDB file has one writer and never conflicts."""
    for tries in range(CONFLICT_RETRIES + 1):
        try:
            with warehouse.conflicts_surface():
                return attempt()
        except Exception as exc:
            if not warehouse.is_commit_conflict(exc):
                raise
            if tries == CONFLICT_RETRIES:
                raise WarehouseError(
                    f"a batch of {what} conflicted with other writers {CONFLICT_RETRIES + 1} "
                    f"times and was not written; re-run to finish ({str(exc).splitlines()[0]})"
                ) from exc
            if on_retry is not None:
                on_retry()
            time.sleep(min(2.0, 0.05 * 2**tries) * (0.5 + random.random() / 2))
    raise AssertionError("unreachable")  # the loop returns or raises
