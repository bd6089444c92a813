"""Reading a large warehouse in stages, under DuckDB's memory limit.

A listing's statement (a window or an aggregate, two or three joins, then a sort) ran out
of memory under the warehouse's limit once the warehouse held enough documents: every
join's hash table and the sort's buffers were held at once (``receipts ls`` failed on
150,000 documents under a 64 MB limit, and ``ls``, ``as-of`` and ``drift`` on the 1.5
million of a two-million-row backfill under the default 256 MB). So such a statement runs
in stages, each blocking operator written to a temporary table (which DuckDB can spill to
disk): :func:`build_in_stages` leaves the last stage as a table (``drift`` reads it several
ways); :func:`staged_rows` reads it back sorted, a few thousand rows at a time (the 1.5
million documents list under a 128 MB limit). The memory this needs still grows with the
warehouse, more slowly."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import duckdb

from warehouse.store import Warehouse

# Rows fetched from DuckDB at a time.
STREAM_ROWS = 4_096
# Where a stage reads the rows of the stage before it.
PREVIOUS = "{previous}"
_runs = itertools.count(1)

Params = Mapping[str, Any]  # a statement's parameters


def fetched(result: duckdb.DuckDBPyConnection) -> Iterator[list[tuple[Any, ...]]]:
    """A statement's rows, :data:`STREAM_ROWS` at a time, each batch as DuckDB hands it
    over (one ``fetchmany`` per batch)."""
    while rows := result.fetchmany(STREAM_ROWS):
        yield rows


def build_in_stages(warehouse: Warehouse, stages: Sequence[tuple[str, str, Params]]) -> None:
    """Write each of ``stages`` (``(name, SELECT, parameters)``; a SELECT may read the
    tables of the stages before it by name) to a temporary table of that name, in turn.
    A stage's table is dropped as soon as no later stage reads it; the last one stays."""
    con = warehouse._con
    kept: list[str] = []
    try:
        for number, (name, select, params) in enumerate(stages):
            con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {select}", dict(params))
            later = [sql for _, sql, _ in stages[number + 1 :]]
            for earlier in [t for t in kept if not any(t in sql for sql in later)]:
                con.execute(f"DROP TABLE {earlier}")
                kept.remove(earlier)
            kept.append(name)
    finally:
        with contextlib.suppress(duckdb.ConnectionException):
            for name in kept:
                if name != stages[-1][0]:
                    con.execute(f"DROP TABLE IF EXISTS {name}")


def staged_rows(
    warehouse: Warehouse,
    stages: Sequence[tuple[str, Params]],
    order_by: str,
    limit: int | None = None,
    offset: int = 0,
) -> Iterator[tuple[Any, ...]]:
    """The rows of the last of ``stages`` (each a SELECT and its parameters; every one after
        the first reads the one before as ``{previous}``) ordered by ``order_by`` (columns of
        its result), the first ``limit`` of them after ``offset`` if given, read a few thousand at
    a time (:func:`fetched`), each batch handed on as it arrives. The
        warehouse's connection runs nothing else until the rows are read or the iterator is
        closed."""
    con = warehouse._con
    run = next(_runs)
    names = [f"_staged_{run}_{number}" for number in range(len(stages))]
    built = [
        (name, select.replace(PREVIOUS, names[number - 1]) if number else select, params)
        for number, (name, (select, params)) in enumerate(zip(names, stages, strict=True))
    ]
    try:
        build_in_stages(warehouse, built)
        limited = "" if limit is None else f" LIMIT {int(limit)}"
        limited += f" OFFSET {int(offset)}" if offset else ""
        result = con.execute(f"SELECT * FROM {names[-1]} ORDER BY {order_by}{limited}")
        for rows in fetched(result):
            yield from rows
    finally:
        # A listing left unread (its reader went away) may end after the warehouse closed:
        # its temporary tables went with the connection.
        with contextlib.suppress(duckdb.ConnectionException):
            con.execute(f"DROP TABLE IF EXISTS {names[-1]}")
