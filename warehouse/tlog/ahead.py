"""An ingest batch's log entries and their hashes, made on a second connection to a DuckDB
file while the batch's own statements write its rows, then stored in the batch's
transaction.

The entries are built by the same statement as :func:`warehouse.tlog.appends.append_ingest_batch`
runs, over the same Arrow table of the batch's revisions, and numbered from the log's size
as committed: a DuckDB file has one writer (this one), whose earlier batches have committed
and whose own transaction appends nothing else to the log before these. :meth:`Ahead.write`
checks that size again inside the transaction before storing anything. The hashing is
Python's and the inserts are DuckDB's, which lets the interpreter go while it works: the
two overlap on two cores. (A lake keeps the append in its transaction: its writers take
turns on the log, :mod:`warehouse.tlog.transactions`.)
"""

from __future__ import annotations

import threading
from typing import Any

import duckdb
import pyarrow as pa

from warehouse.errors import IntegrityError
from warehouse.tlog import store
from warehouse.tlog.appends import BATCH_ORDER, INGEST_BATCH


class Ahead:
    """The entries of an ingest batch's revisions (``payload``, the batch's ``_payload``
    table; ``restored``, the doc_ids it restores) made on a thread and a cursor of ``con``
    from the moment this is made. Use as a context manager: leaving it waits for the thread
    (interrupting its statement when the batch failed) and closes the cursor."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        payload: pa.Table,
        restored: list[str],
        run_id: int,
    ) -> None:
        self._cursor = con.cursor()
        self._result: store.Prepared | None = None
        self._error: BaseException | None = None
        classified = pa.table(
            {
                "doc_id": pa.array(restored, pa.string()),
                "outcome": pa.array(["restored"] * len(restored), pa.string()),
            }
        )
        self._thread = threading.Thread(
            target=self._make, args=(payload, classified, run_id), name="tlog-ahead", daemon=True
        )
        self._thread.start()

    def _make(self, payload: pa.Table, classified: pa.Table, run_id: int) -> None:
        cursor = self._cursor
        try:
            cursor.register("_payload", payload)
            cursor.register("_classified", classified)
            self._result = store.prepare(cursor, INGEST_BATCH, BATCH_ORDER, {"run": run_id})
        except BaseException as error:  # handed to the writer's thread by write()
            self._error = error

    def write(self, con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
        """Store the entries and hashes (inside the batch's transaction on ``con``); their
        bytes are not kept (a DuckDB file rebuilds them from their rows)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        prepared = self._result
        if (now := store.size(con)) != prepared.old:
            raise IntegrityError(
                f"the log holds {now} entries where this batch's were numbered from "
                f"{prepared.old}: another writer appended to it"
            )
        return store.write(con, prepared, keep_entries=False)

    def __enter__(self) -> Ahead:
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if exc[0] is not None and self._thread.is_alive():
                self._cursor.interrupt()
            self._thread.join()
        finally:
            self._cursor.close()
