"""Where an interrupted backfill of the same file resumes, and what makes two runs the same."""

from __future__ import annotations

import hashlib

from pipelines.backfill.request import SOURCE, BackfillRequest
from warehouse.canonical import canonical_json
from warehouse.runs import latest_checkpoint
from warehouse.store import Warehouse


def resume_point(warehouse: Warehouse, scope: str, digest: str) -> int | None:
    """The last committed line of an interrupted backfill of this very file, if any."""
    checkpoint = latest_checkpoint(warehouse, SOURCE, scope)
    if checkpoint is None:
        return None
    file_part, _, line = checkpoint.partition(":")
    return int(line) if file_part == digest[:16] and line.isdigit() else None


def run_hash(request: BackfillRequest, digest: str, member: str) -> str:
    params = {
        "source": SOURCE,
        "kind": request.kind,
        "vehicle": request.vehicle.describe() if request.vehicle.active else None,
        "file_sha256": digest,
        "member": member,
    }
    return hashlib.sha256(canonical_json(params)).hexdigest()
