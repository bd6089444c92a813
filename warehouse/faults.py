"""DuckDB's errors for faults of a lake's storage, as the errors a user can act on: a data
file missing or damaged behind the catalog's back, the PostgreSQL catalog going away.

Pure: each takes DuckDB's message (and what is known of the warehouse) and returns the
:mod:`warehouse.errors` class for it, or None for any other error."""

from __future__ import annotations

import re

from warehouse.errors import CatalogLost, DataFileDamaged, WarehouseDamaged

# A data file DuckLake wrote, as DuckDB's messages quote it: ``<data path>/<schema>/<table>/
# ducklake-<uuid>.parquet`` (DuckLake's default layout; a file it names otherwise is still
# recognised, without its table).
_DATA_FILE = re.compile(r"""["']([^"']*?ducklake-[0-9a-f-]+\.parquet)["']""")
_TABLE_OF = re.compile(r"/([A-Za-z_][A-Za-z0-9_]*)/ducklake-[0-9a-f-]+\.parquet$")
# What DuckDB says of a file that is not there, and of one that is not the Parquet it was.
_MISSING = ("no such file or directory", "cannot open file", "not found", "404")
_DAMAGED = (
    "invalid footer",
    "no magic bytes",
    "not a parquet file",
    "corrupt",
    "checksum",
    "could not read",
    "failed to read",
    "thrift",
    "out of buffer",
    "invalid input error",
    "io error",
)


def data_file_fault(message: str) -> DataFileDamaged | None:
    """The damaged data file ``message`` names, if it names one of the lake's data files."""
    found = _DATA_FILE.search(message)
    if found is None:
        return None
    path = found.group(1)
    table = _TABLE_OF.search(path)
    lowered = message.lower()
    if any(marker in lowered for marker in _MISSING):
        detail = "missing"
    elif any(marker in lowered for marker in _DAMAGED):
        said = " ".join(_first_line(message).replace(found.group(0), "").split())
        detail = f"damaged ({said})"
    else:
        return None
    return DataFileDamaged(path, table.group(1) if table else None, detail)


# What libpq (through DuckDB's postgres extension) says when the server stops answering: it
# stopped or restarted, a backend was terminated (``pg_terminate_backend``), the network went.
# First the words of a connection that was made and then lost; then those a server that never
# answered says too.
_CUT_OFF = (
    "server closed the connection unexpectedly",
    "terminating connection due to administrator command",
    "could not receive data from server",
    "could not send data to server",
    "ssl connection has been closed unexpectedly",
    "the database system is shutting down",
)
_CONNECTION_LOST = (
    *_CUT_OFF,
    "connection refused",
    "no connection to the server",
    "the database system is starting up",
    "the database system is in recovery mode",
    "connection to server at",
    "unable to connect to postgres",
)
# A transaction's end that failed with no word from the server: the connection is gone.
_SILENT_ROLLBACK = 'failed to execute query "rollback"'


def catalog_fault(message: str, location: str) -> CatalogLost | None:
    """The lost catalog ``message`` tells of, for a lake whose PostgreSQL catalog is at
    ``location``."""
    lowered = message.lower()
    for marker in _CONNECTION_LOST:
        if marker in lowered:
            return CatalogLost(location, marker)
    if _SILENT_ROLLBACK in lowered:
        return CatalogLost(location, "a transaction could not be ended")
    return None


def catalog_cut_off(message: str, location: str) -> CatalogLost | None:
    """The lost catalog ``message`` tells of, when it says a connection that was made was
    lost (while a lake was being opened or made: a catalog that never answered is not
    "lost")."""
    lowered = message.lower()
    marker = next((m for m in _CUT_OFF if m in lowered), None)
    return None if marker is None else CatalogLost(location, marker)


def _first_line(message: str) -> str:
    text = message.strip()
    return text.splitlines()[0] if text else "unreadable"


# What DuckDB says of a file that is truncated, overwritten or fails its block checksums.
_DAMAGE_MARKERS = (
    "corrupt database file",
    "could not read enough bytes",
    "not a valid duckdb database file",
    "does not match stored checksum",
)


def file_damage(location: str, message: str) -> WarehouseDamaged | None:
    """The :class:`WarehouseDamaged` error for DuckDB's ``message`` when it says the
    DuckDB file at ``location`` is damaged."""
    message = message.strip()
    if not any(marker in message.lower() for marker in _DAMAGE_MARKERS):
        return None
    return WarehouseDamaged(location, message.splitlines()[0] if message else "unreadable")


# DuckDB's refusal of a file whose storage format is newer than it reads, e.g. "Trying to
# read a database file with version number 999, but we can only read versions between 64
# and 68." (DuckDB 1.5.5 opening a file that DuckDB 2.0.1 wrote).
_NEWER_STORAGE = re.compile(
    r"version number (\d+), but we can only read versions between (\d+) and (\d+)"
)


def newer_storage(message: str, duckdb_version: str) -> str | None:
    """What to do about a file a newer DuckDB wrote than ``duckdb_version``, or None for any
    other refusal."""
    found = _NEWER_STORAGE.search(message)
    if found is None:
        return None
    version, low, high = found.groups()
    return (
        f"it was written by a newer DuckDB (storage version {version}) than the one receipts "
        f"runs (DuckDB {duckdb_version}, storage versions {low} to {high}); copy it into "
        "a file this DuckDB reads with the DuckDB that wrote it (the docs' backends page, "
        "'A file from a newer DuckDB', gives the three statements)"
    )
