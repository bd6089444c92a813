"""A transaction that appends to the transparency log.

On a lake, entries are numbered by the log's size as the transaction sees it: two writers
appending at once would give two entries one number. Writers that log hold the lake's
``tlog`` lock from before their transaction starts to after it commits; a DuckDB file has
one writer anyway."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

from warehouse.store import Warehouse


@contextmanager
def logged_transaction(warehouse: Warehouse) -> Iterator[duckdb.DuckDBPyConnection]:
    with warehouse.serial("tlog"), warehouse._transaction() as con:
        yield con
