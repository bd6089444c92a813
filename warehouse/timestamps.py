"""How receipts writes a moment and a span of time, everywhere it writes one.

- Text (tables, summaries, reports, ``claims history``): ISO-8601 in UTC to the second,
  with ``Z``: ``2026-11-03T06:00:00Z`` (:func:`to_second`).
- Machine formats (``--json``, ``--nl``, ``--csv``, exports): ISO-8601 in UTC at full
  precision, with ``Z``: ``2026-11-03T06:00:00.512031Z``, the fraction left out when it is
  zero (:func:`utc_iso`). DuckDB's own CSV writer (``receipts export --format csv``) is
  given :data:`DUCKDB_TIMESTAMP_FORMAT`, the same form with its fraction always written.
- Spans (durations, ETAs): ``42s``, ``1m05s``, ``2h03m`` (:func:`duration`).
"""

from __future__ import annotations

from datetime import UTC, datetime

# strftime format of DuckDB's COPY ... (TIMESTAMPFORMAT ...), for a connection in UTC.
DUCKDB_TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def _utc(value: str | datetime) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)


def to_second(value: str | datetime | None) -> str:
    """``2026-11-03T06:00:00Z`` (``-`` for no moment): a moment as text shows it."""
    if value is None:
        return "-"
    return _utc(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_iso(value: str | datetime | None) -> str | None:
    """``2026-11-03T06:00:00.512031Z``: a moment at full precision, as machines read it."""
    if value is None:
        return None
    return _utc(value).isoformat().replace("+00:00", "Z")


def duration(seconds: float | None) -> str | None:
    """``42s``, ``1m05s``, ``2h03m``: how long something took or will take, to the second."""
    if seconds is None:
        return None
    whole = max(round(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"
