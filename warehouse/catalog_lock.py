"""Locks every writer of a DuckLake warehouse can see, kept where its catalog is.

A DuckLake has no single file to lock: writers on several processes (or machines) share the
catalog. Two kinds of lock are taken, by name:

- the **corpus lock** (``corpus:<name>``), held by a run for its whole length, so that two
  writers of one corpus never interleave (writers of different corpora run side by side);
- short **serial locks** (``ids:runs``, ``schema``), held around allocating the next run id
  and around migrations, where two writers would otherwise race.

On a PostgreSQL catalog they are PostgreSQL advisory locks (``pg_try_advisory_lock``) taken
in a transaction of their own, through DuckDB's postgres extension; on a SQLite catalog
(one machine) a ``flock`` on a file in ``<catalog>.locks/``. Both are released by the
server or the kernel when their holder dies, even by SIGKILL: a lock never outlives its
process. Who holds a corpus is read from the run ledger (the corpus's unfinished run).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
from pathlib import Path
from typing import IO, Protocol, cast

import duckdb

from warehouse import kept_open

# Where the receipts locks of a PostgreSQL catalog are taken (a plain attach of the same
# database, beside DuckLake's own).
LOCKS_ALIAS = "receipts_locks"


class LakeTarget(Protocol):
    """What the locks need of a lake's location (:class:`warehouse.backends.Target`)."""

    @property
    def catalog(self) -> str | None: ...

    @property
    def catalog_dsn(self) -> str | None: ...


def lock_key(name: str) -> int:
    """A signed 64-bit key for ``name`` (a PostgreSQL advisory lock's key)."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big", signed=True)


def _pg_query(sql: str) -> str:
    """A statement running ``sql`` on the PostgreSQL catalog (a table function, which takes
    no prepared parameters: ``sql`` is built here from integers only)."""
    quoted = sql.replace("'", "''")
    return f"SELECT * FROM postgres_query('{LOCKS_ALIAS}', '{quoted}')"


def _end(cursor: duckdb.DuckDBPyConnection) -> None:
    """Roll back ``cursor``'s transaction and close it. A cursor closed with its PostgreSQL
    transaction open rolls it back in a destructor, and a rollback failing there (the
    catalog gone) aborts the process (DuckDB 1.5.5: "terminate called after throwing",
    SIGABRT). A ROLLBACK that fails may leave the transaction open: that cursor is kept
    instead of closed (:mod:`warehouse.kept_open`; reproduced, one backfill in 36 whose
    catalog was stopped at a random moment aborted closing it)."""
    try:
        cursor.execute("ROLLBACK")
    except duckdb.Error as exc:
        if kept_open.may_be_open(exc):
            kept_open.keep(cursor)
            return
    cursor.close()


class CatalogLocks:
    """The locks of one lake warehouse, as held by this process."""

    def __init__(self, target: LakeTarget, con: duckdb.DuckDBPyConnection) -> None:
        self.target = target
        self._con = con
        self._held: dict[str, duckdb.DuckDBPyConnection | IO[str]] = {}

    # -- sqlite: flock on a file per name ---------------------------------------------------
    def _lock_file(self, name: str) -> Path:
        assert self.target.catalog_dsn is not None
        catalog = Path(self.target.catalog_dsn)
        folder = catalog.with_name(catalog.name + ".locks")
        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:24]
        return folder / f"{digest}.lock"

    def _flock(self, name: str, mode: int) -> IO[str] | None:
        path = self._lock_file(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("a+")
        try:
            fcntl.flock(handle.fileno(), mode | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return None
        return handle

    # -- postgres: an advisory lock in a transaction of its own -------------------------------
    def _pg_try(self, cursor: duckdb.DuckDBPyConnection, name: str) -> bool:
        sql = f"SELECT pg_try_advisory_lock({lock_key(name)}) AS got"
        row = cursor.execute(_pg_query(sql)).fetchall()
        return bool(row and row[0][0])

    def try_acquire(self, name: str) -> bool:
        """Take the lock ``name`` if no one holds it; True when this process now holds it."""
        if name in self._held:
            return True
        if self.target.catalog == "postgres":
            cursor = self._con.cursor()
            try:
                cursor.execute("BEGIN TRANSACTION")  # one PostgreSQL session, until release
                got = self._pg_try(cursor, name)
            except BaseException:
                _end(cursor)  # the catalog went away: the transaction still ends here
                raise
            if not got:
                _end(cursor)
                return False
            self._held[name] = cursor
            return True
        handle = self._flock(name, fcntl.LOCK_EX)
        if handle is None:
            return False
        self._held[name] = handle
        return True

    def release(self, name: str) -> None:
        held = self._held.pop(name, None)
        if held is None:
            return
        if self.target.catalog == "postgres":  # a cursor in a transaction of its own
            cursor = cast(duckdb.DuckDBPyConnection, held)
            with contextlib.suppress(duckdb.Error):
                sql = f"SELECT pg_advisory_unlock({lock_key(name)})"
                cursor.execute(_pg_query(sql)).fetchall()
            _end(cursor)
            return
        handle = cast(IO[str], held)  # a file locked with flock
        with contextlib.suppress(OSError):
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()

    def release_all(self) -> None:
        for name in list(self._held):
            self.release(name)

    def held_by_anyone(self, name: str) -> bool:
        """Whether some process (this one included) holds ``name`` now."""
        if name in self._held:
            return True
        if self.target.catalog == "postgres":
            unsigned = lock_key(name) & 0xFFFF_FFFF_FFFF_FFFF
            sql = (
                "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                f"AND classid::bigint = {unsigned >> 32} AND objid::bigint = "
                f"{unsigned & 0xFFFF_FFFF} AND objsubid = 1"
            )
            cursor = self._con.cursor()
            try:
                row = cursor.execute(_pg_query(sql)).fetchall()
            finally:
                cursor.close()
            return bool(row and row[0][0])
        handle = self._flock(name, fcntl.LOCK_SH)
        if handle is None:
            return True
        with contextlib.suppress(OSError):
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()
        return False
