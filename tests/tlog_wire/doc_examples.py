"""The entries docs/transparency-log.md shows, made by the formatter (a test checks the page
shows exactly these)."""

from __future__ import annotations

from datetime import UTC, datetime

from warehouse.tlog import entries

REVISION = entries.revision_entry(
    doc_id="nhtsa/complaint/11561420",
    document="complaint",
    revision=2,
    content_hash="9f2c5b1d0e7a4c3b8a6f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3",
    tombstone=False,
    reason=None,
    restores=False,
    source_url="https://api.nhtsa.gov/complaints/complaintsByVehicle?make=honda&model=cr-v"
    "&modelYear=2019",
    source_commit=None,
    seen_at=datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
    run=12,
)
PUSH = entries.push_entry(
    push_id=7,
    target="ndjson:out/atlas.ndjson",
    namespace="atlas",
    manifest="atlas",
    run=12,
    status="ok",
    applied=24,
    unrelated_before=3,
    unrelated_after=3,
    touched_by_us=0,
    transaction_ids=["rcpt-7-1a2b3c4d-1-0123456789abcdef", "rcpt-7-1a2b3c4d-2-fedcba9876543210"],
)

if __name__ == "__main__":
    print(REVISION.decode())
    print(PUSH.decode())
