"""Where a warehouse lives: a DuckDB file, or a DuckLake catalog (SQLite or PostgreSQL) with
its data files in a data path (a folder, shared storage, or S3-compatible object storage).

``--warehouse`` takes one of:

    receipts.duckdb                               a DuckDB file: one process at a time
    ducklake:sqlite:CATALOG.sqlite                a DuckLake on a SQLite catalog: several
                                                  processes on one machine
    ducklake:postgres:dbname=receipts host=db     a DuckLake on a PostgreSQL catalog: several
                                                  machines (the data path on shared storage)

and a DuckLake needs a data path when it is created (``--data-path`` / ``RECEIPTS_DATA_PATH``;
afterwards the catalog remembers it). An ``s3://`` data path reads its credentials from the
environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``,
``AWS_REGION``, and ``AWS_ENDPOINT_URL`` for S3-compatible storage).

Everything above ``warehouse/`` sees one kind of warehouse: the lake, or the DuckDB file,
is attached as the default catalog of an in-memory DuckDB connection, so every statement
runs unchanged.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from warehouse import extensions, faults, kept_open, object_store, settings
from warehouse.catalog_lock import LOCKS_ALIAS, CatalogLocks
from warehouse.errors import ReceiptsError, UsageError, WarehouseBusy, WarehouseError
from warehouse.spill import SpillDirectory
from warehouse.sql_literal import string as _quote

ENV_DATA_PATH = "RECEIPTS_DATA_PATH"
LAKE_PREFIX = "ducklake:"
CATALOGS = ("sqlite", "postgres")
LAKE_ALIAS = "lake"
# A lake's connection spills under the system's temporary directory, in a directory of its own;
# so does a read-only connection to a DuckDB file (several may read one file at once). Its
# writer spills in a directory of its own under ``<file>.tmp`` (connect_file says why).
LAKE_SPILL_PREFIX = "receipts-lake-"
READER_SPILL_PREFIX = "receipts-read-"
WRITER_SPILL_PREFIX = "receipts-write-"
FILE_ALIAS = "warehouse"
# Rows per row group of a DuckDB file (DuckDB's default: 122,880). A transaction that
# appends a whole row group to a table has DuckDB write it straight into the file,
# compressed, instead of into the WAL first and into the file again at the next checkpoint;
# batches of ingest and backfill are whole row groups of this size (see
# warehouse.ingest.DEFAULT_BATCH_SIZE). A file does not record it: it applies to the row
# groups written while the file is attached with it, as every warehouse connection does.
ROW_GROUP_SIZE = 16_384
# A lake's snapshots take Parquet row groups of this many rows (a DuckLake option scoped to
# the table): a Parquet reader holds a whole row group's column while reading it, one per
# thread, and 16,384 complaint bodies are a 37 MB column, two of which (at DuckDB's two
# threads here) did not fit the default memory limit: `verify` and `export` of a lake
# holding a 600,000-row backfill ran out of memory ("failed to allocate data of size
# 64.0 MiB"), and `verify` named the file as altered. 2,048 is the least DuckDB writes.
SNAPSHOTS_ROW_GROUP_SIZE = 2_048
# The catalog lock held while attaching a lake (which creates it when it does not exist), and
# the least time a writer waits for another to finish creating it.
CREATION_LOCK = "serial:create"
CREATION_WAIT = 60.0
# The extension each catalog needs besides ducklake itself (and the PyPI wheel's name).
_CATALOG_EXTENSIONS = {"sqlite": "sqlite_scanner", "postgres": "postgres_scanner"}
# What needs each extension, for the line that says one is missing.
_EXTENSION_NEEDED_BY = {
    "ducklake": "a DuckLake warehouse",
    "sqlite_scanner": "a DuckLake on a SQLite catalog",
    "postgres_scanner": "a DuckLake on a PostgreSQL catalog",
    "httpfs": "an s3:// data path",
}


def missing_extension(name: str) -> str:
    """The one line saying that DuckDB's extension ``name`` is missing, and how to get it."""
    needed_by = _EXTENSION_NEEDED_BY.get(name, "this warehouse")
    return (
        f"{needed_by} needs DuckDB's {name} extension: pip install 'receipts[lake]' "
        f"(DuckDB 1.5.5 and the extension wheels), or a DuckDB that can `INSTALL {name}`"
    )


LAKE_EXTRA_HINT = missing_extension("ducklake")


class WarehouseURL(str):
    """A ``--warehouse`` value that carries the ``--data-path`` given beside it."""

    data_path: str | None

    def __new__(cls, value: str, data_path: str | None = None) -> WarehouseURL:
        made = super().__new__(cls, value)
        made.data_path = data_path
        return made


@dataclass(frozen=True)
class Target:
    """A parsed warehouse location."""

    location: str
    kind: str  # "file", "memory" or "lake"
    path: Path | None = None  # the DuckDB file
    catalog: str | None = None  # "sqlite" or "postgres"
    catalog_dsn: str | None = None  # the SQLite file, or the libpq connection string
    data_path: str | None = None

    @property
    def is_lake(self) -> bool:
        return self.kind == "lake"

    @property
    def backend(self) -> str:
        """``duckdb``, ``ducklake:sqlite`` or ``ducklake:postgres``."""
        return f"ducklake:{self.catalog}" if self.is_lake else "duckdb"

    def attach_sql(self) -> str:
        return f"ducklake:{self.catalog}:{self.catalog_dsn}"


# A password in a libpq connection string (``password=VALUE``, the value bare or quoted) or
# URI (``postgresql://user:VALUE@host``): never shown, in a message or an error.
_PASSWORD_RE = re.compile(
    r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s\"]+)|(://[^:/@\s]*:)[^@\s]*(@)"
)


def without_password(text: str) -> str:
    """``text`` with any connection-string password in it replaced by ``***``."""
    return _PASSWORD_RE.sub(
        lambda m: f"{m[1]}***" if m[1] is not None else f"{m[3]}***{m[4]}", text
    )


def parse(location: str, data_path: str | None = None) -> Target:
    """The warehouse ``location`` names (see the module docstring). Its ``location`` is for
    showing: without a password (:func:`without_password`); the catalog's own connection
    string keeps it."""
    data_path = data_path or getattr(location, "data_path", None) or settings.current().data_path
    location = str(location)
    if location.startswith(LAKE_PREFIX):
        rest = location[len(LAKE_PREFIX) :]
        catalog, _, dsn = rest.partition(":")
        shown = without_password(location)
        if catalog not in CATALOGS or not dsn.strip():
            raise UsageError(
                f"cannot read the warehouse {shown!r}: a DuckLake warehouse is "
                "ducklake:sqlite:CATALOG.sqlite or ducklake:postgres:dbname=NAME host=HOST"
            )
        if catalog == "sqlite":
            dsn = str(Path(dsn).expanduser())
        return Target(shown, "lake", catalog=catalog, catalog_dsn=dsn, data_path=data_path)
    if location == ":memory:":
        return Target(location, "memory")
    if ":" in location.split("/", 1)[0]:
        raise UsageError(
            f"cannot read the warehouse {location!r}: give a DuckDB file path, "
            "ducklake:sqlite:CATALOG.sqlite or ducklake:postgres:dbname=NAME host=HOST"
        )
    return Target(location, "file", path=Path(location))


def set_row_groups(con: duckdb.DuckDBPyConnection, size: int, table: str | None = None) -> None:
    """Set a lake's Parquet row groups to ``size`` rows (DuckLake's ``parquet_row_group_size``,
    kept in its catalog), lake-wide or for ``table`` (which must be committed: DuckLake
    refuses options for a table made in the transaction under way)."""
    scoped = "" if table is None else f", table_name => '{table}'"
    con.execute(f"CALL {LAKE_ALIAS}.set_option('parquet_row_group_size', {size}{scoped})")


def load_extension(con: duckdb.DuckDBPyConnection, name: str, binary: Path | None = None) -> None:
    """Load a DuckDB extension: from its PyPI wheel (``duckdb-extension-<name>``, the
    ``receipts[lake]`` extra) when installed, its binary checked by DuckDB's signature check
    once (:mod:`warehouse.extensions`), else the usual way (``INSTALL`` from DuckDB's
    repository), checked by DuckDB even on a connection that does not check what it loads.
    Without either, one line saying which extra to install. ``binary``: its wheel's binary,
    already checked (:func:`warehouse.extensions.checked`)."""
    if binary is None:
        binary = (extensions.checked([name]) or {}).get(name)
    if binary is not None:
        con.execute(f"LOAD {_quote(str(binary))}")
        return
    try:
        if extensions.allows_unchecked(con):
            extensions.signature_check(name)
        con.execute(f"LOAD {name}")
    except duckdb.Error:
        raise WarehouseError(missing_extension(name)) from None


def _s3_secret(
    con: duckdb.DuckDBPyConnection, data_path: str | None, httpfs: Path | None = None
) -> None:
    """DuckDB's httpfs and the credentials for an s3:// data path, from the settings (never
    stored): every S3 request of the connection goes to the configured endpoint. With the
    data path known, a first listing checks the bucket and the credentials. ``httpfs``: its
    wheel's binary, when already checked."""
    load_extension(con, "httpfs", httpfs)
    con.execute(object_store.secret_sql())
    if data_path:
        object_store.check_bucket(con, data_path)


def _needs_httpfs(error: duckdb.Error) -> bool:
    """Whether attaching failed because the lake's data path needs httpfs, not yet loaded."""
    # "... requires the extension httpfs to be loaded" where DuckDB may not load it itself
    # (a connection of checked binaries), the extension quoted where it may
    return re.search(r"\bhttpfs\b", str(error)) is not None


def lake_data_path(con: duckdb.DuckDBPyConnection) -> str:
    """The data path the lake's catalog records ("" when it records none)."""
    row = con.execute(
        f"SELECT value FROM {LAKE_ALIAS}.options() WHERE option_name = 'data_path'"
    ).fetchone()
    return str(row[0]) if row else ""


def _no_warehouse(target: Target) -> str:
    return (
        f"no warehouse at {target.location}: run `receipts ingest MANIFEST` first, or point "
        "--warehouse at an existing one"
    )


def _open_error(target: Target, exc: duckdb.Error) -> ReceiptsError:
    """What a refused ``ATTACH`` of the lake (or of its PostgreSQL catalog) tells the user."""
    text = str(exc).strip()
    message = without_password(text.splitlines()[0] if text else repr(exc))
    lost = faults.catalog_cut_off(text, target.location) if target.catalog == "postgres" else None
    if lost is not None:  # the catalog went away while the lake was opened or made
        return lost
    if "data_path" in message.lower() or "data path" in message.lower():
        return UsageError(
            f"a new DuckLake warehouse needs a data path for its files: "
            f"--data-path DIR (or {ENV_DATA_PATH}): {message}"
        )
    return WarehouseError(f"cannot open warehouse {target.location}: {message}")


# The table every DuckLake catalog has (DuckLake's specification: ``ducklake_metadata``).
_LAKE_TABLE = "ducklake_metadata"


def _postgres_holds_lake(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the PostgreSQL database attached as :data:`LOCKS_ALIAS` holds a DuckLake
    catalog (a database made for one, but never written to, holds none yet)."""
    sql = f"SELECT count(*) AS n FROM pg_tables WHERE tablename = ''{_LAKE_TABLE}''"
    row = con.execute(f"SELECT * FROM postgres_query('{LOCKS_ALIAS}', '{sql}')").fetchone()
    return bool(row and row[0])


@contextmanager
def _creation_lock(target: Target, con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Held around attaching the lake, which creates its catalog when there is none yet:
    of several first writers at once, one creates it and the others wait, then attach what
    it made (two creating at once fail: SQLite answers "database is locked", PostgreSQL
    "duplicate key value"). A catalog lock (:mod:`warehouse.catalog_lock`): an advisory
    lock on PostgreSQL, a ``flock`` beside a SQLite catalog."""
    from warehouse.lock import lock_wait

    locks = CatalogLocks(target, con)
    deadline = time.monotonic() + max(lock_wait(), CREATION_WAIT)
    while not locks.try_acquire(CREATION_LOCK):
        if time.monotonic() >= deadline:
            raise WarehouseBusy(target.location, None, None, holder="a writer creating it")
        time.sleep(0.05)
    try:
        yield
    finally:
        locks.release_all()


class AttachedConnection:
    """A connection whose cursors, too, default to the attached warehouse (``USE`` is per
    connection, and the warehouse's readers open cursors of their own); with ``spill``, the
    spill directory of its own, removed when it closes."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, alias: str, spill: SpillDirectory | None = None
    ) -> None:
        self._raw = con
        self._alias = alias
        self._spill = spill

    def cursor(self) -> duckdb.DuckDBPyConnection:
        cursor = self._raw.cursor()
        cursor.execute(f"USE {self._alias}")
        return cursor

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            if self._spill is not None:
                self._spill.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def connect_lake(
    target: Target, *, read_only: bool, config: dict[str, Any]
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the lake attached as its default catalog. It
    spills to a directory of its own under the system's temporary directory (``TMPDIR``),
    removed when it closes: DuckDB's default for an in-memory database, ``.tmp`` in the
    working directory, is shared by every process started there (:mod:`warehouse.spill`)."""
    assert target.catalog is not None and target.catalog_dsn is not None
    needed = ["ducklake", _CATALOG_EXTENSIONS[target.catalog]]
    if (target.data_path or "").startswith("s3://"):
        needed.append("httpfs")
    # Extensions come from their wheels (or DuckDB's own folder), never downloaded mid-run;
    # binaries DuckDB has checked once are not checked again (warehouse.extensions).
    binaries = extensions.checked(needed) or {}
    checked = extensions.TRUSTED_CONFIG if binaries else {}
    spill = SpillDirectory(LAKE_SPILL_PREFIX)
    con = _in_memory({**config, "autoinstall_known_extensions": False, **checked}, spill)
    try:
        for name in needed[:2]:
            load_extension(con, name, binaries.get(name))
        if target.catalog == "sqlite":
            # Every read of the catalog on the transaction's own SQLite connection. Otherwise
            # a scan made before the transaction has written opens connections of its own
            # beside it, one per thread (duckdb-sqlite, src/storage/sqlite_table_entry.cpp,
            # GetScanFunction); a backfill's final commit, reading the latest snapshot that
            # way, once failed with "database is locked" in a process with no other writer.
            con.execute("SET sqlite_disable_multithreaded_scans = true")
            exists = Path(target.catalog_dsn).exists()
            if read_only and not exists:
                raise WarehouseError(_no_warehouse(target))
            if not exists and not target.data_path:
                raise UsageError(
                    f"a new DuckLake warehouse needs a data path for its files: "
                    f"--data-path DIR (or {ENV_DATA_PATH})"
                )
        options = []
        on_s3 = False
        if target.data_path:
            data_path = target.data_path
            if "://" not in data_path:
                Path(data_path).mkdir(parents=True, exist_ok=True)
                data_path = str(Path(data_path).resolve()) + "/"
            elif data_path.startswith("s3://"):
                _s3_secret(con, data_path, binaries.get("httpfs"))
                on_s3 = True
            options.append(f"DATA_PATH {_quote(data_path)}")
        if read_only:
            options.append("READ_ONLY")
        suffix = f" ({', '.join(options)})" if options else ""
        attach = f"ATTACH {_quote(target.attach_sql())} AS {LAKE_ALIAS}{suffix}"
        try:
            if target.catalog == "postgres":
                con.execute(f"ATTACH {_quote(target.catalog_dsn)} AS {LOCKS_ALIAS} (TYPE postgres)")
                if read_only and not _postgres_holds_lake(con):
                    raise WarehouseError(_no_warehouse(target))
            with nullcontext() if read_only else _creation_lock(target, con):
                try:
                    con.execute(attach)
                except duckdb.Error as exc:
                    # A lake whose catalog remembers an s3:// data path: httpfs and the
                    # credentials, then again.
                    if on_s3 or not _needs_httpfs(exc):
                        raise
                    _s3_secret(con, None)
                    con.execute(attach)
                    object_store.check_bucket(con, lake_data_path(con))
                    on_s3 = True
        except duckdb.Error as exc:
            raise _open_error(target, exc) from None
        if not on_s3 and lake_data_path(con).startswith("s3://"):
            _s3_secret(con, lake_data_path(con))  # httpfs was found in DuckDB's own folder
        con.execute(f"USE {LAKE_ALIAS}")
    except BaseException:
        kept_open.close(con)  # kept if a lock's cursor of it is (the catalog gone)
        spill.close()
        raise
    wrapped: duckdb.DuckDBPyConnection = AttachedConnection(con, LAKE_ALIAS, spill)  # type: ignore[assignment]
    return wrapped  # a DuckDBPyConnection to everyone who uses it


def _in_memory(config: dict[str, Any], spill: SpillDirectory | str) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection that spills to ``spill``: a directory's path, or a
    :class:`SpillDirectory` made now (and closed again if the connection cannot be made)."""
    if isinstance(spill, str):
        return duckdb.connect(":memory:", config={**config, "temp_directory": spill})
    try:
        return duckdb.connect(":memory:", config={**config, "temp_directory": str(spill.make())})
    except BaseException:
        spill.close()
        raise


def spill_location(location: str) -> str:
    """Where the writer of the DuckDB file at ``location`` spills: a directory of its own
    under ``<file>.tmp`` (the backfill's build database too)."""
    return f"{location}.tmp"


def connect_file(
    location: str, *, read_only: bool, config: dict[str, Any], local_file: bool
) -> duckdb.DuckDBPyConnection:
    """A connection whose default catalog is the DuckDB database at ``location``.

    A file is attached to an in-memory connection rather than opened by it: only ``ATTACH``
    takes a row group size (:data:`ROW_GROUP_SIZE`). Each connection spills to a directory
    of its own, removed when it closes: two DuckDB databases spilling into one directory
    read each other's blocks (:mod:`warehouse.spill`). A reader's is under the system's
    temporary directory (``TMPDIR``): several readers may hold one file at once (``serve``
    beside an ``export``). The writer's is under ``<file>.tmp``, where DuckDB spills for a
    file it opens itself: a file has one writer, but a run still writing to a file deleted
    (with its lock) meanwhile and a run on a new file at the same path both spilled to
    ``<file>.tmp`` itself, and one of them crashed (DuckDB, a query sorting beyond its
    memory limit in each: SIGSEGV in 2 trials of 2). Anything but a local file
    (``:memory:``, another scheme) is opened as it is."""
    if not local_file:
        return duckdb.connect(location, read_only=read_only, config=config)
    spill = (
        SpillDirectory(READER_SPILL_PREFIX)
        if read_only
        else SpillDirectory(WRITER_SPILL_PREFIX, Path(spill_location(location)).absolute())
    )
    con = _in_memory(config, spill)
    options = f"ROW_GROUP_SIZE {ROW_GROUP_SIZE}" + (", READ_ONLY" if read_only else "")
    wrapped: duckdb.DuckDBPyConnection = AttachedConnection(con, FILE_ALIAS, spill)  # type: ignore[assignment]
    try:
        con.execute(f"ATTACH {_quote(location)} AS {FILE_ALIAS} ({options})")
        con.execute(f"USE {FILE_ALIAS}")
    except BaseException:
        wrapped.close()
        raise
    return wrapped
