"""The one clock the warehouse reads.

``RECEIPTS_NOW`` (ISO-8601, e.g. ``2026-11-01T06:00:00Z``) freezes it, so a replayed session
(the offline demo, a reproducible audit) writes the same timestamps every time.
"""

from __future__ import annotations

from datetime import UTC, datetime

from warehouse import settings


def now() -> datetime:
    frozen = settings.current().now
    return frozen if frozen is not None else datetime.now(UTC)
