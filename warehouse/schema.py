"""The warehouse's schema: the migrations this version ships, which of them a warehouse has
applied, applying the rest, and the tables and columns they make.

The migrations are package data (``warehouse/migrations/NNNN_name.sql``), applied in order,
each in its own transaction, and recorded with their checksum in ``schema_migrations``: an
applied migration that differs from the shipped one, or a schema newer than this version's,
is refused. :class:`warehouse.store.Warehouse` runs them when it opens a warehouse for
writing; these functions take its connection.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from importlib import resources
from typing import Any, NamedTuple

import duckdb

from warehouse import canonical
from warehouse.clock import now
from warehouse.errors import SchemaError, UsageError
from warehouse.snapshot_forms import fill_forms
from warehouse.tlog import store as tlog_store
from warehouse.tlog.appends import log_history
from warehouse.tlog.heads import record_origin

# A transaction on the warehouse's connection (``Warehouse._transaction``).
Transaction = Callable[[], AbstractContextManager[Any]]

_SCHEMA_MIGRATIONS = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    "version INTEGER NOT NULL, name VARCHAR NOT NULL, checksum VARCHAR NOT NULL, "
    "applied_at TIMESTAMPTZ NOT NULL)"
)


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()

    @property
    def storage_only(self) -> bool:
        """Whether it only changes how a DuckDB file stores its tables (a ``-- backend:
        duckdb`` line in its header): where that storage is not there to change, it is
        recorded with nothing to do (see :func:`runs_here`)."""
        header = itertools.takewhile(lambda line: line.startswith("--"), self.sql.splitlines())
        return any(line.strip() == "-- backend: duckdb" for line in header)


class Column(NamedTuple):
    name: str
    data_type: str
    nullable: bool


class Table(NamedTuple):
    """A table or view of the warehouse and its columns, in their order."""

    name: str
    view: bool
    columns: tuple[Column, ...]


def migrations() -> list[Migration]:
    """Every migration shipped with this version, in order."""
    found = []
    for entry in resources.files("warehouse.migrations").iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append(Migration(int(name[:4]), name[5:-4], entry.read_text("utf-8")))
    return sorted(found, key=lambda m: m.version)


# What a migration does beyond its SQL, in its transaction: 0009 logs an older warehouse's
# history in the transparency log it makes; 0010 records the canonical form of every
# snapshot stored before it.
def _make_log(con: duckdb.DuckDBPyConnection) -> None:
    record_origin(con)
    log_history(con)


AFTER_MIGRATION: dict[int, Callable[[duckdb.DuckDBPyConnection], None]] = {
    9: _make_log,
    10: fill_forms,
}

# The first storage format of DuckDB files with zstd-compressed columns.
ZSTD_STORAGE = (1, 2, 0)


def _storage_version(con: duckdb.DuckDBPyConnection) -> tuple[int, ...] | None:
    """The storage format of the connection's database file (``v1.0.0+`` -> ``(1, 0, 0)``);
    None for an in-memory database, which has none (it stores what the library writes)."""
    row = con.execute(
        "SELECT tags['storage_version'] FROM duckdb_databases() "
        "WHERE database_name = current_database()"
    ).fetchone()
    digits = (str(row[0]) if row and row[0] else "").strip("v+").split(".")
    if not all(d.isdigit() for d in digits):
        return None
    return tuple(int(d) for d in digits)


def applied_migrations(con: duckdb.DuckDBPyConnection) -> dict[int, str]:
    """The checksum of each migration applied here, by version."""
    [(exists,)] = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migrations' "
        "AND table_catalog = current_database()"
    ).fetchall()
    if not exists:
        return {}
    rows = con.execute("SELECT version, checksum FROM schema_migrations").fetchall()
    applied = {int(v): str(c) for v, c in rows}
    tlog_store.note_migrations(con, applied)
    return applied


def pending_migrations(applied: Mapping[int, str], location: str) -> list[Migration]:
    """The shipped migrations not among ``applied`` (the checksums of a warehouse's, at
    ``location``), in order; :class:`SchemaError` when an applied one differs from the one
    this version ships, or the schema is newer than this version's (an older receipts must
    not write to it)."""
    shipped = migrations()
    for migration in shipped:
        if migration.version in applied and applied[migration.version] != migration.checksum:
            raise SchemaError(
                f"migration {migration.version} ({migration.name}) in {location} "
                "differs from the one this version ships"
            )
    newest = max(applied, default=0)
    if newest > shipped[-1].version:
        raise SchemaError(
            f"{location} has schema version {newest}, newer than this receipts "
            f"understands ({shipped[-1].version}); upgrade receipts"
        )
    return [m for m in shipped if m.version not in applied]


def check_schema(con: duckdb.DuckDBPyConnection, location: str, behind_ok: bool = False) -> None:
    """:class:`SchemaError` unless this version can read the warehouse as it is: its
    migrations are this version's and none is pending (unless ``behind_ok``)."""
    applied = applied_migrations(con)
    pending = pending_migrations(applied, location)
    if not applied:
        refuse_unfinished_copy(con, location)
    if pending and not behind_ok:
        raise SchemaError(
            f"{location} is at schema version {max(applied, default=0)}, behind this "
            f"receipts ({pending[-1].version}); run `receipts migrate` (any writing "
            "command migrates it too)"
        )


def runs_here(con: duckdb.DuckDBPyConnection, migration: Migration, *, is_lake: bool) -> bool:
    """Whether ``migration``'s SQL runs on this connection's warehouse. A storage-only one
    does not on a lake (its rows are in Parquet files, compressed by DuckLake) nor on a
    DuckDB file whose storage format predates zstd (v1.2.0; DuckDB 1.x made files in an
    older one by default)."""
    if not migration.storage_only:
        return True
    if is_lake:
        return False
    version = _storage_version(con)
    return version is None or version >= ZSTD_STORAGE


def migrate(
    con: duckdb.DuckDBPyConnection, location: str, *, is_lake: bool, transaction: Transaction
) -> list[Migration]:
    """Apply pending migrations, each in its own ``transaction``, and return them. Refuses
    (:func:`pending_migrations`) a schema this version did not write, and an unfinished
    copy's (:func:`refuse_unfinished_copy`)."""
    applied = applied_migrations(con)
    if not applied:  # a new warehouse, or the empty tables of an unfinished copy
        refuse_unfinished_copy(con, location)
        con.execute(_SCHEMA_MIGRATIONS)
    done = []
    for migration in pending_migrations(applied, location):
        with transaction():
            if runs_here(con, migration, is_lake=is_lake):
                con.execute(migration.sql)
            if migration.version in AFTER_MIGRATION:
                AFTER_MIGRATION[migration.version](con)
            con.execute(
                "INSERT INTO schema_migrations SELECT $1, $2, $3, $4 "
                "WHERE NOT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)",
                [migration.version, migration.name, migration.checksum, now()],
            )
            if migration.version == 1:
                _record_meta(
                    con,
                    {
                        "hash_algorithm": canonical.HASH_ALGORITHM,
                        "canonical_form_version": str(canonical.CANONICAL_FORM_VERSION),
                    },
                )
            elif migration.version == FORMS_RECORDED:
                _record_form_version(con)
        tlog_store.note_migrations(con, [migration.version])  # committed
        done.append(migration)
    return done


def create_schema(con: duckdb.DuckDBPyConnection, location: str, *, is_lake: bool) -> None:
    """Every shipped migration's tables and views, without the rows :func:`migrate` records
    (a copy brings the source's own), in the caller's transaction. Only on a warehouse with
    no schema yet, or the empty one an unfinished copy left (:func:`unfinished_copy`): its
    tables and views are made again."""
    if unfinished_copy(con):
        for table in sorted(tables(con), key=lambda t: not t.view):  # views first
            con.execute(f'DROP {"VIEW" if table.view else "TABLE"} "{table.name}"')
    elif tables(con):
        raise UsageError(f"copy needs a new warehouse; {location} already has tables")
    con.execute(_SCHEMA_MIGRATIONS)
    for migration in migrations():
        if runs_here(con, migration, is_lake=is_lake):
            con.execute(migration.sql)


def unfinished_copy(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the warehouse holds receipts' tables and not one row, no migration recorded:
    what a ``receipts copy`` that failed or was killed left behind, before copies made their
    schema in the same transaction as their rows."""
    if applied_migrations(con):  # first: the usual answer, without listing every table
        return False
    made = [t.name for t in tables(con) if not t.view]
    if "schema_migrations" not in made:
        return False
    return all(
        con.execute(f'SELECT count(*) FROM (SELECT 1 FROM "{name}" LIMIT 1)').fetchone() == (0,)
        for name in made
    )


def refuse_unfinished_copy(con: duckdb.DuckDBPyConnection, location: str) -> None:
    """:class:`SchemaError` naming the command that completes an unfinished copy."""
    if unfinished_copy(con):
        raise SchemaError(
            f"{location} holds the empty tables of a `receipts copy` that did not finish "
            f"(schema version 0, no rows): run the same `receipts copy --to {location}` again "
            "to complete it"
        )


# The migration from which each snapshot's form is recorded: a warehouse made before it
# records, when it is applied, that it now writes canonical form v2.
FORMS_RECORDED = 10


def _record_form_version(con: duckdb.DuckDBPyConnection) -> None:
    version = str(canonical.CANONICAL_FORM_VERSION)
    if meta(con).get("canonical_form_version") != version:
        _record_meta(con, {"canonical_form_version": version})


def _record_meta(con: duckdb.DuckDBPyConnection, values: dict[str, str]) -> None:
    at = now()
    for key, value in values.items():
        con.execute("INSERT INTO warehouse_meta VALUES ($1, $2, $3)", [key, value, at])


def meta(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """The warehouse's settings recorded at its creation (the hash algorithm, the canonical
    form's version), each at its latest value."""
    rows = con.execute(
        "SELECT key, arg_max(value, recorded_at) FROM warehouse_meta GROUP BY key"
    ).fetchall()
    return {str(k): str(v) for k, v in rows}


def tables(con: duckdb.DuckDBPyConnection) -> list[Table]:
    """Every table and view of the schema, by name, with its columns."""
    listed = con.execute(
        "SELECT table_name, table_type FROM information_schema.tables "
        "WHERE table_schema = 'main' AND table_catalog = current_database() "
        "ORDER BY table_name"
    ).fetchall()
    out = []
    for name, table_type in listed:
        columns = con.execute(
            "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
            "WHERE table_name = $t AND table_schema = 'main' "
            "AND table_catalog = current_database() ORDER BY ordinal_position",
            {"t": name},
        ).fetchall()
        out.append(
            Table(
                str(name),
                table_type == "VIEW",
                tuple(Column(str(c), str(t), n == "YES") for c, t, n in columns),
            )
        )
    return out
