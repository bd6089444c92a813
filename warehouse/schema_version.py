"""The schema version this receipts writes: the newest shipped migration's number, read from
the migrations' file names (``0008_snapshot_body_zstd.sql`` -> 8) without importing DuckDB."""

from __future__ import annotations

from importlib import resources


def shipped_schema_version() -> int:
    """The number of the newest migration shipped in ``warehouse/migrations/``."""
    numbers = [
        int(entry.name[:4])
        for entry in resources.files("warehouse.migrations").iterdir()
        if entry.name.endswith(".sql") and entry.name[:4].isdigit()
    ]
    return max(numbers, default=0)
