"""A DuckDB engine of its own for a backfill's build statements.

A backfill's second pass groups the rows of each block's documents of several rows into
documents with one statement (see :func:`warehouse.bulk.build_sql.build_sql`; each row's
object is made in Arrow first), a pure function of the rows it is given: it reads no table
of the warehouse. Run on the warehouse's connection, it shares one buffer pool with
the scratch database and the batches being committed; under the backfill's memory limit
the three evicted one another. Measured on two million rows (``make bench``'s file): the
statements took about three times as long as on a fresh connection, and pass 2 spent as much
CPU in the kernel, faulting pages in, as in user code. Here they run in an in-memory
database of their own, whose buffers hold one block's lines and nothing else.

Its memory follows the block (a few MB of lines, plus the lines of documents still open);
its limit is a backstop, beyond which it spills to a directory of its own
(:mod:`warehouse.spill`), made in a parent its owner names: beside the warehouse's own spill
files, so that a large spill lands on the disk the user chose for the warehouse, not in a
small temporary file system. A parent the engine had to make is removed at close when
nothing else is left in it; a directory left by a killed backfill is removed by the next
engine opened beside it.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from warehouse import settings
from warehouse.bulk.out_of_memory import build_hint, governed_by
from warehouse.slices import in_slices
from warehouse.spill import SpillDirectory

_SPILL_PREFIX = "receipts-build-"
BUILD_DATABASE_MEMORY_LIMIT = settings.DEFAULT_BUILD_MEMORY_LIMIT
ENV_BUILD_MEMORY_LIMIT = "RECEIPTS_BACKFILL_BUILD_MEMORY_LIMIT"


def build_memory_limit() -> str:
    """The build database's limit: ``$RECEIPTS_BACKFILL_BUILD_MEMORY_LIMIT`` (or the config
    file's ``backfill_build_memory_limit``), else :data:`BUILD_DATABASE_MEMORY_LIMIT`."""
    return settings.current().backfill_build_memory_limit


class BuildEngine:
    """An in-memory DuckDB database, opened at its first statement, for statements over
    one Arrow table at a time."""

    def __init__(self, memory_limit: str, spill_parent: Path | None = None) -> None:
        """``memory_limit``: DuckDB's limit for this database (``'128MB'``);
        ``spill_parent``: where its spill directory is made, made too if need be (default:
        the system's temporary directory)."""
        self.memory_limit = memory_limit
        self.spill_parent = spill_parent
        self._con: duckdb.DuckDBPyConnection | None = None
        self._spill = SpillDirectory(_SPILL_PREFIX, spill_parent)

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            try:
                config: dict[str, str | bool | int | float | list[str]] = {
                    "memory_limit": self.memory_limit,
                    "temp_directory": str(self._spill.make()),
                }
                self._con = duckdb.connect(":memory:", config=config)
            except BaseException:
                self.close()  # no spill directory is left behind by a failed open
                raise
        return self._con

    def run(self, sql: str, table: pa.Table, name: str) -> pa.Table:
        """The result of ``sql``, which reads ``table`` under the name ``name``."""
        con = self._connection()
        con.register(name, in_slices(table))
        try:
            with governed_by(build_hint(ENV_BUILD_MEMORY_LIMIT, self.memory_limit)):
                return con.sql(sql).to_arrow_table()
        finally:
            con.unregister(name)

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
        self._spill.close()
