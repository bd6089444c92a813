"""The schema version this receipts writes: the newest shipped migration's number, read from
the migrations' file names (``0008_snapshot_body_zstd.sql`` -> 8) without importing DuckDB."""

from __future__ import annotations

from pathlib import Path

MIGRATIONS = Path(__file__).with_name("migrations")


def shipped_schema_version() -> int:
    """The number of the newest migration shipped in ``warehouse/migrations/``."""
    numbers = [int(path.name[:4]) for path in MIGRATIONS.glob("[0-9][0-9][0-9][0-9]_*.sql")]
    return max(numbers, default=0)
