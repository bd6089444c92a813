"""Scratch tables: a private, memory-limited DuckDB database beside the warehouse, for work
too big for memory that the warehouse need not keep (it spills to disk)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa


class KeyLines:
    """``(key, line)`` pairs (the rows of a file that belong to one document), kept in a
    scratch DuckDB database that spills to ``directory/spill``."""

    def __init__(self, directory: Path, memory_limit: str) -> None:
        self._con = duckdb.connect(
            ":memory:",
            config={
                "memory_limit": memory_limit,
                "temp_directory": str(directory / "spill"),
                "preserve_insertion_order": False,
            },
        )
        # No progress bar on stdout: it would land in the middle of `--json` output.
        self._con.execute("SET SESSION enable_progress_bar = false")
        self._con.execute("CREATE TABLE key_lines (key VARCHAR, line BIGINT)")

    def add(self, keys: list[str], lines: list[int]) -> None:
        chunk = pa.table({"key": keys, "line": pa.array(lines, pa.int64())})
        self._con.register("_chunk", chunk)
        try:
            self._con.execute("INSERT INTO key_lines SELECT key, line FROM _chunk")
        finally:
            self._con.unregister("_chunk")

    def last_lines(self, chunk: int = 50_000) -> Iterator[int]:
        """The last line of each key, in no particular order, streamed."""
        cursor = self._con.execute("SELECT max(line) FROM key_lines GROUP BY key")
        while rows := cursor.fetchmany(chunk):
            for (line,) in rows:
                yield int(line)

    def close(self) -> None:
        self._con.close()
