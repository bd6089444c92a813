"""The one clock the warehouse reads.

``RECEIPTS_NOW`` (ISO-8601, e.g. ``2026-11-01T06:00:00Z``) freezes it, so a replayed session
(the offline demo, a reproducible audit) writes the same timestamps every time.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime


def now() -> datetime:
    frozen = os.environ.get("RECEIPTS_NOW")
    if frozen:
        value = datetime.fromisoformat(frozen.replace("Z", "+00:00"))
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.now(UTC)
