"""``receipts --version``: this version, the DuckDB it runs and the warehouse schema it writes,
read without importing DuckDB (the package's metadata, the shipped migrations' file names)."""

from __future__ import annotations

from warehouse.schema_version import shipped_schema_version


def version_message() -> str:
    """E.g. ``0.2.0 (DuckDB 1.5.5, warehouse schema 8)``."""
    from importlib import metadata

    from pipelines import __version__

    try:
        duckdb_version = metadata.version("duckdb")
    except metadata.PackageNotFoundError:
        duckdb_version = "not installed"
    return f"{__version__} (DuckDB {duckdb_version}, warehouse schema {shipped_schema_version()})"
