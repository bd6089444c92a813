"""Opening a warehouse: the connection string, the writer lock, its settings and
transactions; its schema and migrations are :mod:`warehouse.schema`'s.

A warehouse is a DuckDB file or a DuckLake catalog (``warehouse/backends.py``); the
``Warehouse`` hides which: the lake is the default catalog of its connection, and its locks
(``warehouse/catalog_lock.py``) stand in for the file's."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from warehouse import backends, faults, kept_open, lost_catalog, object_store, schema, settings
from warehouse.catalog_lock import CatalogLocks
from warehouse.errors import (
    NotAWarehouse,
    OutOfMemory,
    ReceiptsError,
    WarehouseBusy,
    WarehouseDamaged,
    WarehouseError,
    human_duration,
)
from warehouse.lock import FileLock, lock_wait, notify_stderr, read_holder
from warehouse.schema import Migration, Table

DEFAULT_WAREHOUSE = "receipts.duckdb"
ENV_WAREHOUSE = "RECEIPTS_WAREHOUSE"
# DuckDB caches pages up to its memory limit (by default most of the machine's memory), so a
# process's footprint would grow with the warehouse. A fixed limit on the warehouse's
# connection keeps it bounded by the work at hand; beyond it DuckDB spills to disk.
ENV_WAREHOUSE_MEMORY_LIMIT = "RECEIPTS_DUCKDB_MEMORY_LIMIT"
DEFAULT_WAREHOUSE_MEMORY_LIMIT = settings.DEFAULT_WAREHOUSE_MEMORY_LIMIT
# During bulk writes (an ingest, a backfill) the WAL is checkpointed into the database less
# often than by default: a checkpoint costs an fsync and a rewrite of the table's open row
# group, and batches commit every few thousand documents. (Measured: 150,000 ~1.3 KB bodies
# in batches of 20,000 took 6.0 s at 64 MB, 2.0 s at 1 GB, the same CPU time.) A crash
# replays at most this much WAL.
BULK_CHECKPOINT_THRESHOLD = "512MB"
# Batches commit often; checkpointing the WAL into the database every 16 MB (DuckDB's
# default) made commits most of a first ingest's time. Measured on 100k ~1 KB records:
# 5.5 s at 16 MB, 3.7 s at 64 MB.
CHECKPOINT_THRESHOLD = "64MB"


def warehouse_memory_limit() -> str:
    """The memory limit of a warehouse's connection: ``$RECEIPTS_DUCKDB_MEMORY_LIMIT``, else
    the config file's ``duckdb_memory_limit``, else the default (checked by
    :mod:`warehouse.settings`)."""
    return settings.current().duckdb_memory_limit


def resolve_location(location: str | None) -> str:
    """The connection string: the argument, else ``$RECEIPTS_WAREHOUSE``, else the config
    file's ``warehouse``, else the default."""
    return location or settings.current().warehouse


def _local_path(location: str) -> Path | None:
    """The database file behind a plain path connection string (None for other schemes)."""
    if location == ":memory:" or ":" in location.split("/", 1)[0]:
        return None
    return Path(location)


def _damage(location: str, exc: BaseException | None) -> WarehouseDamaged | None:
    """The :class:`WarehouseDamaged` error for a DuckDB error that says the file is damaged."""
    return faults.file_damage(location, str(exc)) if isinstance(exc, duckdb.Error) else None


# Every DuckDB database file has this at bytes 8-11 of its first header (after a checksum).
_DUCKDB_MAGIC = b"DUCK"


def recognise(path: Path, location: str) -> None:
    """Raise :class:`NotAWarehouse` unless ``path`` is a DuckDB database file (damaged or
    not: a damaged one is :class:`WarehouseDamaged` when DuckDB opens it)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(12)
    except IsADirectoryError:
        raise NotAWarehouse(location) from None
    except OSError as exc:
        raise WarehouseError(f"cannot read warehouse {location}: {exc.strerror}") from None
    if head[8:12] != _DUCKDB_MAGIC:
        raise NotAWarehouse(location)


def _pid_from_duckdb_message(message: str) -> int | None:
    marker = "(PID "
    start = message.find(marker)
    if start < 0:
        return None
    digits = message[start + len(marker) :].split(")", 1)[0]
    return int(digits) if digits.isdigit() else None


def _connect_file(
    location: str, *, read_only: bool
) -> tuple[duckdb.DuckDBPyConnection, FileLock | None]:
    """A connection to the DuckDB file at ``location`` (or in memory), with the file's lock
    held; DuckDB's refusals as the errors a user can act on."""
    path = _local_path(location)
    lock: FileLock | None = None
    if path is not None and read_only and not path.exists():
        raise WarehouseError(
            f"no warehouse at {location}: run `receipts ingest MANIFEST` first, "
            "or point --warehouse at an existing one"
        )
    if path is not None and (path.exists() or path.is_symlink()):
        # Recognised before anything is written beside it (its lock file, a WAL).
        recognise(path, location)
    if path is not None:
        # A writer waits for readers to close, a reader for the writer to finish
        # (bounded: RECEIPTS_LOCK_WAIT); a DuckDB file cannot have both at once.
        lock = FileLock(path, shared=read_only)
        lock.acquire()
    try:
        con = backends.connect_file(
            location, read_only=read_only, config=_file_config(), local_file=path is not None
        )
    except duckdb.Error as exc:
        if lock is not None:
            lock.release()
        damaged = _damage(location, exc)
        if damaged is not None:
            raise damaged from None
        if not isinstance(exc, duckdb.IOException):
            raise
        message = str(exc)
        if "lock" in message.lower() and path is not None:
            run_id, pid = read_holder(path)
            raise WarehouseBusy(
                location,
                run_id,
                pid or _pid_from_duckdb_message(message),
                reading=read_only,
            ) from None
        newer = faults.newer_storage(message, duckdb.__version__)
        if newer is not None:
            raise WarehouseError(f"cannot open warehouse {location}: {newer}") from None
        raise WarehouseError(f"cannot open warehouse {location}: {message}") from None
    return con, lock


def _file_config() -> dict[str, Any]:
    return {
        "memory_limit": warehouse_memory_limit(),
        "checkpoint_threshold": CHECKPOINT_THRESHOLD,
        # A new file in the newest format this DuckDB writes (DuckDB 1.x wrote v1.0.0 by
        # default, which has no zstd); an existing file keeps its own.
        "storage_compatibility_version": "latest",
        **settings.duckdb_threads(),
    }


class Warehouse:
    """A connection to a receipts warehouse.

    The connection is private to ``warehouse/``: other packages call the typed functions of
    its modules, which return named rows.
    """

    def __init__(
        self, con: duckdb.DuckDBPyConnection, location: str, lock: FileLock | None
    ) -> None:
        self._con = con
        self.location = location
        self._lock = lock
        self.migrated: list[Migration] = []  # the migrations opening it applied
        # DuckDB draws its own progress bar into stdout for a statement that runs for
        # seconds (a migration copying a table, say), where `--json` output goes; receipts
        # reports progress itself, on stderr.
        con.execute("SET enable_progress_bar = false")

    # The lake behind this warehouse, if it is one (None for a DuckDB file).
    target: backends.Target | None = None
    _locks: CatalogLocks | None = None
    # Whether a ROLLBACK failed (the lake's catalog gone), which may leave its transaction
    # open: the connection is then kept, not closed (warehouse.kept_open).
    _unended = False

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        location: str | None = None,
        *,
        read_only: bool = False,
        data_path: str | None = None,
        migrate: bool = True,
    ) -> Warehouse:
        """Open the warehouse at ``location`` (a DuckDB file, or a ``ducklake:`` URL with
        its ``data_path``); for writing it is migrated first (unless ``migrate`` is False:
        a copy's destination, see :meth:`create_schema`). Read-only, its schema must be
        this version's, unless ``migrate`` is False: then it may be behind (``receipts
        migrate --check``). Either way a schema newer than this version's is refused."""
        location = resolve_location(location)
        target = backends.parse(location, data_path)
        if target.is_lake:
            return cls._open_lake(target, read_only=read_only, migrate=migrate)
        location = str(location)
        con, lock = _connect_file(location, read_only=read_only)
        warehouse = cls(con, location, lock)
        try:
            warehouse._refuse_foreign_database()
            if read_only:
                schema.check_schema(con, warehouse.location, behind_ok=not migrate)
            elif migrate:
                warehouse.migrated = warehouse.migrate()
        except Exception as exc:
            warehouse.close()
            damaged = _damage(location, exc)
            if damaged is not None:
                raise damaged from None
            raise
        return warehouse

    @classmethod
    def _open_lake(cls, target: backends.Target, *, read_only: bool, migrate: bool) -> Warehouse:
        if target.catalog == "postgres":  # named by a lost connection's error from now on
            lost_catalog.opened(target.location)
        try:
            con = backends.connect_lake(
                target,
                read_only=read_only,
                config={"memory_limit": warehouse_memory_limit(), **settings.duckdb_threads()},
            )
        except duckdb.Error as exc:
            lost = lost_catalog.gone(target, exc, known_error(exc))
            if lost is not None:
                raise lost from None
            raise
        warehouse = cls(con, target.location, None)
        warehouse.target = target
        warehouse._locks = CatalogLocks(target, con)
        try:
            if read_only:
                schema.check_schema(con, warehouse.location, behind_ok=not migrate)
            elif migrate:
                with warehouse.serial("schema"):
                    warehouse.migrated = warehouse.migrate()
                    warehouse.bound_row_groups()
        except BaseException as exc:
            warehouse.close()
            lost = lost_catalog.gone(target, exc, known_error(exc))
            if lost is not None:
                raise lost from None
            raise
        return warehouse

    def _refuse_foreign_database(self) -> None:
        """A DuckDB database holding tables but none of receipts' is someone else's: neither
        read as a warehouse behind this version nor migrated into."""
        if self.applied_migrations() or schema.unfinished_copy(self._con):
            return
        found = self._first_row(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_catalog = current_database() LIMIT 1",
            {},
        )
        if found is not None:
            raise NotAWarehouse(
                self.location, f"a DuckDB database without receipts' tables, e.g. {found[0]!r}"
            )

    def close(self) -> None:
        try:
            if self._locks is not None:
                self._locks.release_all()
            if self._unended:
                kept_open.keep(self._con)  # closing it would roll back in a destructor
            else:
                kept_open.close(self._con)
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        """Close; a DuckDB error saying the file is damaged (truncated, failing its
        checksums) leaves as :class:`WarehouseDamaged`, one line for the user, and one that
        names no cause while the lake's PostgreSQL catalog does not answer as
        :class:`CatalogLost`."""
        self.close()
        damaged = _damage(self.location, exc)
        if damaged is not None:
            raise damaged from None
        if self.target is not None and exc is not None:
            lost = lost_catalog.gone(self.target, exc, known_error(exc))
            if lost is not None:
                raise lost from None

    def describe_holder(self, run_id: int | None) -> None:
        if self._lock is not None:
            self._lock.describe(run_id)

    # -- backends and their locks ---------------------------------------------------------
    @property
    def is_lake(self) -> bool:
        return self.target is not None

    @property
    def backend(self) -> str:
        """``duckdb``, ``ducklake:sqlite`` or ``ducklake:postgres``."""
        return "duckdb" if self.target is None else self.target.backend

    def lock_corpus(self, corpus: str, wait: float | None = None) -> None:
        """Hold the corpus lock until this warehouse is closed: on a lake, the second writer
        of a corpus waits for the first (up to ``RECEIPTS_LOCK_WAIT`` seconds), then fails
        naming it. A DuckDB file has one writer anyway."""
        if self._locks is None:
            return
        name = f"corpus:{corpus}"
        wait = lock_wait() if wait is None else wait
        started = time.monotonic()
        told = False
        while not self._locks.try_acquire(name):
            waited = time.monotonic() - started
            if waited >= wait:
                raise self._corpus_busy(corpus, waited) from None
            if not told:
                busy = self._corpus_busy(corpus, waited)
                limit = human_duration(wait)
                notify_stderr(f"{busy.waiting_line()}; waiting up to {limit} (RECEIPTS_LOCK_WAIT)")
                told = True
            time.sleep(min(0.25, max(0.0, wait - waited)))

    def _corpus_busy(self, corpus: str, waited: float) -> WarehouseBusy:
        row = self._first_row(
            "SELECT run_id, pid, host, started_at FROM run_summary WHERE manifest_name = $c "
            "AND status = 'unfinished' ORDER BY run_id DESC LIMIT 1",
            {"c": corpus},
        )
        if row is None:
            return WarehouseBusy(
                self.location, None, None, holder=f"a writer of corpus {corpus}", waited=waited
            )
        run_id, pid, host, started = row
        running_for = None
        if started is not None:
            running_for = (datetime.now(UTC) - started).total_seconds()
        return WarehouseBusy(
            self.location,
            int(run_id),
            pid,
            running_for=running_for,
            holder=f"run {run_id} of corpus {corpus} on {host}",
            waited=waited,
        )

    def corpus_running(self, corpus: str | None) -> bool:
        """Whether some process holds the corpus lock now (a lake's run is going on)."""
        if self._locks is None or corpus is None:
            return False
        return self._locks.held_by_anyone(f"corpus:{corpus}")

    @contextmanager
    def serial(self, name: str) -> Iterator[None]:
        """On a lake, one process at a time in the block (allocating the next id, migrating);
        a DuckDB file has one writer anyway."""
        if self._locks is None:
            yield
            return
        deadline = time.monotonic() + max(lock_wait(), 60.0)
        while not self._locks.try_acquire(f"serial:{name}"):
            if time.monotonic() >= deadline:
                raise WarehouseBusy(self.location, None, None, holder=f"a writer ({name})")
            time.sleep(0.02)
        try:
            yield
        finally:
            self._locks.release(f"serial:{name}")

    # -- schema (warehouse.schema) ---------------------------------------------------------
    def applied_migrations(self) -> dict[int, str]:
        return schema.applied_migrations(self._con)

    def pending_migrations(self) -> list[Migration]:
        """The shipped migrations not applied here, in order (see
        :func:`warehouse.schema.pending_migrations`)."""
        return schema.pending_migrations(self.applied_migrations(), self.location)

    def schema_version(self) -> int:
        """The newest migration applied here (0 for none)."""
        return max(self.applied_migrations(), default=0)

    def migrate(self) -> list[Migration]:
        """Apply pending migrations, each in its own transaction, and return them."""
        return schema.migrate(
            self._con, self.location, is_lake=self.is_lake, transaction=self._transaction
        )

    def reconnect_file(self) -> None:
        """A new connection to this warehouse's DuckDB file, whose connection was closed to
        hand the file to another (:mod:`warehouse.copy`); its lock stayed held."""
        self._con = backends.connect_file(
            self.location, read_only=False, config=_file_config(), local_file=True
        )
        self._con.execute("SET enable_progress_bar = false")

    def create_schema(self) -> None:
        """Every shipped migration's tables and views, in the transaction under way, on a
        warehouse with none yet (a copy's destination: see
        :func:`warehouse.schema.create_schema`)."""
        schema.create_schema(self._con, self.location, is_lake=self.is_lake)

    def meta(self) -> dict[str, str]:
        return schema.meta(self._con)

    def tables(self) -> list[Table]:
        """Every table and view of the schema, by name, with its columns."""
        return schema.tables(self._con)

    # -- settings ------------------------------------------------------------------------
    @property
    def spill_directory(self) -> Path | None:
        """Under which DuckDB spills this warehouse's buffers beyond its memory limit, each
        connection in a directory of its own: ``<file>.tmp`` beside a DuckDB file (whether
        or not it exists yet); None for anything else."""
        path = _local_path(self.location)
        return None if path is None else Path(backends.spill_location(str(path))).absolute()

    @contextmanager
    def memory_limit(self, limit: str) -> Iterator[None]:
        """DuckDB's memory limit set to ``limit`` (e.g. ``'256MB'``) for the duration."""
        previous = self._scalar("SELECT current_setting('memory_limit')")
        self._con.execute(f"SET memory_limit = '{limit}'")
        try:
            yield
        finally:
            self._con.execute(f"SET memory_limit = '{previous}'")

    def bound_row_groups(self, *, snapshots: bool = True) -> None:
        """On a lake, Parquet row groups of :data:`~warehouse.backends.ROW_GROUP_SIZE` rows,
        and :data:`~warehouse.backends.SNAPSHOTS_ROW_GROUP_SIZE` for the snapshots (DuckLake
        options in its catalog, set by the first writer or copy that finds them missing):
        DuckLake buffers a whole row group while writing it (122,880 rows by default: of
        the bodies, more than the default memory limit), a reader a whole column of one."""
        if not self.is_lake:
            return
        found = self._con.execute(
            f"SELECT scope_entry, value FROM ducklake_options('{backends.LAKE_ALIAS}') "
            "WHERE option_name = 'parquet_row_group_size'"
        ).fetchall()
        current = {entry: str(value) for entry, value in found}  # None: lake-wide
        for table in (None, "snapshots") if snapshots else (None,):  # snapshots: committed
            size = backends.ROW_GROUP_SIZE if table is None else backends.SNAPSHOTS_ROW_GROUP_SIZE
            if current.get(table and f"main.{table}") != str(size):
                backends.set_row_groups(self._con, size, table)

    @contextmanager
    def bulk_writes(self) -> Iterator[None]:
        """Settings for a run of many large commits: the WAL is checkpointed into the
        database less often."""
        row = self._con.execute("SELECT current_setting('checkpoint_threshold')").fetchone()
        previous = str(row[0]) if row else None
        self._con.execute(f"SET checkpoint_threshold = '{BULK_CHECKPOINT_THRESHOLD}'")
        try:
            yield
        finally:
            if previous is not None:
                self._con.execute(f"SET checkpoint_threshold = '{previous}'")

    # -- transactions --------------------------------------------------------------------
    @contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        if self.target is not None and self.target.catalog == "sqlite":
            # SQLite takes one writer at a time and answers "database is locked" to the
            # others: on a SQLite catalog, transactions take turns (the work between them,
            # fetching and hashing, still runs side by side).
            with self.serial("commit"):
                yield from self._transaction_body()
            return
        yield from self._transaction_body()

    @contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """Reads of one state of the warehouse, whatever other writers commit meanwhile. On
        a PostgreSQL catalog, a transaction that writes nothing (DuckLake reads the snapshot
        current when it began); on a SQLite catalog, whose open read transaction would make
        a writer's commit fail ("database is locked"), the commit turn writers take, so they
        wait for the reads instead; a DuckDB file has no other writer."""
        if self.target is None or self.target.catalog is None:
            yield
            return
        if self.target.catalog == "sqlite":
            with self.serial("commit"):
                yield
            return
        self._con.execute("BEGIN TRANSACTION")
        try:
            yield
        finally:
            self._rollback()

    @contextmanager
    def conflicts_surface(self) -> Iterator[None]:
        """On a lake, let a commit that conflicts with another writer's fail at once (DuckLake
        otherwise retries it internally, unseen) so the caller can retry the whole batch
        and count it; a DuckDB file has one writer and never conflicts."""
        if not self.is_lake:
            yield
            return
        self._con.execute("SET ducklake_max_retry_count = 0")
        try:
            yield
        finally:
            self._con.execute("RESET ducklake_max_retry_count")

    def _transaction_body(self) -> Iterator[duckdb.DuckDBPyConnection]:
        self._con.execute("BEGIN TRANSACTION")
        try:
            yield self._con
        except BaseException:
            self._rollback()  # the error that stopped the transaction says why
            raise
        try:
            self._con.execute("COMMIT")
        except duckdb.TransactionException:
            with contextlib.suppress(duckdb.Error):  # a failed commit may have ended it already
                self._con.execute("ROLLBACK")
            raise

    def _rollback(self) -> None:
        """ROLLBACK. One that fails (the lake's catalog went away) may leave the transaction
        open; the connection is then kept at close instead of closed (a destructor's
        rollback failing would abort the process: warehouse.kept_open)."""
        try:
            self._con.execute("ROLLBACK")
        except duckdb.Error as exc:
            self._unended = self._unended or kept_open.may_be_open(exc)

    @staticmethod
    def is_commit_conflict(exc: BaseException) -> bool:
        """Whether ``exc`` is a commit refused because another writer committed first
        (DuckLake's optimistic concurrency): worth retrying the whole transaction."""
        return isinstance(exc, duckdb.TransactionException) and (
            "Failed to commit DuckLake transaction" in str(exc) or "conflict" in str(exc).lower()
        )

    def _first_row(self, sql: str, params: Any = None) -> tuple[Any, ...] | None:
        """The first row of a query, reading the whole result (DuckDB 2 refuses new work
        on a connection while a result is only partly fetched)."""
        rows = self._con.execute(sql, params if params is not None else []).fetchall()
        return tuple(rows[0]) if rows else None

    def _scalar(self, sql: str, params: Any = None) -> Any:
        row = self._first_row(sql, params)
        return None if row is None else row[0]

    def _connection_for_tests(self) -> duckdb.DuckDBPyConnection:
        """The raw connection, only for tests that tamper with stored rows behind the
        warehouse's back (bit rot, an edited migration)."""
        return self._con


def known_error(exc: BaseException) -> ReceiptsError | None:
    """The known error ``exc`` is (itself) or stands for, if any: DuckDB running out of
    memory under the limit is the size of the work, not a bug (its advice after its first
    line is left out: the hint says what to change here)."""
    if isinstance(exc, ReceiptsError):
        return exc
    on_s3 = object_store.known_error(exc)
    if on_s3 is not None:
        return on_s3
    if isinstance(exc, duckdb.OutOfMemoryException):
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else "out of memory"
        return OutOfMemory(detail, ENV_WAREHOUSE_MEMORY_LIMIT, DEFAULT_WAREHOUSE_MEMORY_LIMIT)
    if isinstance(exc, duckdb.Error):
        message = str(exc)
        return lost_catalog.told_by(message) or faults.data_file_fault(message)
    return None
