"""A scheduled refresh: ingest every entry, publish, then the drift summary of the run.

The target is read for target drift (Studio edits, deletions, open drafts) before the push,
and only reported. Ingest and publish stay separate steps: a failed publish never loses the
ingested data, and one failing entry does not stop the others. A signal during the ingest
records its run ``interrupted``; after it, the run stays as it finished.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines import USER_AGENT
from pipelines.checks.claims import ClaimsCheck, check_claims
from pipelines.checks.claims_source import manifest_claims
from pipelines.checks.target_drift import TargetDrift, target_drift
from pipelines.ingest import IngestOptions, RunResult, run_ingest
from pipelines.manifest import Manifest
from pipelines.progress import Reporter
from pipelines.publish.curate import curate_manifest
from pipelines.publish.push import PushProgress, PushResult, push
from pipelines.publish.targets import Target, check_sanity_configuration, open_target
from sources.http import HttpFactory
from sources.registry import SOURCES
from warehouse.asof import Point
from warehouse.drift import Drift, DriftRow, compare, default_points
from warehouse.errors import HttpError, ReceiptsError
from warehouse.interrupt import interruption
from warehouse.store import Warehouse


@dataclass
class RefreshResult:
    ingest: RunResult
    drift: Drift
    target_drift: TargetDrift | None = None
    push: PushResult | None = None
    publish_error: str | None = None
    claims: ClaimsCheck | None = None
    claims_error: str | None = None

    @property
    def drift_found(self) -> bool:
        return (
            self.drift.found
            or bool(self.target_drift and self.target_drift.found)
            or bool(self.claims and self.claims.changed)
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "run": self.ingest.as_json(),
            "target_drift": None if self.target_drift is None else self.target_drift.as_json(),
            "push": None if self.push is None else self.push.as_json(),
            "publish_error": self.publish_error,
            "drift": drift_summary(self.drift),
            "claims": None if self.claims is None else claims_summary(self.claims),
            "claims_error": self.claims_error,
            # The log's checkpoint at the end: the push's, else the ingest's.
            "log_checkpoint": (
                self.push.log_checkpoint
                if self.push is not None and self.push.log_checkpoint is not None
                else self.ingest.log_checkpoint
            ),
        }


def claims_summary(check: ClaimsCheck) -> dict[str, Any]:
    """The claims check of a refresh: counts, the claims whose status changed in this run,
    and the rows that could not be read."""
    full = check.as_json()
    return {key: full[key] for key in ("check_id", "counts", "changed", "bad_rows")}


def metadata_fields() -> dict[str, tuple[str, ...]]:
    """The metadata fields each registered source declares (those that declare some)."""
    return {name: s.metadata_fields for name, s in SOURCES.items() if s.metadata_fields}


def _document(row: DriftRow) -> dict[str, Any]:
    out = {
        "doc_id": row.doc_id,
        "outcome": row.outcome,
        "old_revision": None if row.old is None else row.old.revision,
        "new_revision": row.new.revision,
        "old_hash": None if row.old is None else row.old.content_hash,
        "new_hash": row.new.content_hash,
        "left_corpus": row.left_corpus,
    }
    return out if row.change is None else out | {"change": row.change.as_json()}


def drift_summary(drift: Drift) -> dict[str, Any]:
    """Counts per source, one line per drifted document, the documents this run's listings
    missed without proving them gone (``unseen``), and apart, the documents changed in
    metadata fields only (not drift): the summary a refresh prints."""
    return {
        "since_run": None if drift.since_run is None else drift.since_run.run_id,
        "until_run": None if drift.until_run is None else drift.until_run.run_id,
        "found": drift.found,
        "counts": drift.counts,
        "documents": [_document(row) for row in drift.rows],
        "omitted": drift.omitted,
        "metadata_counts": drift.metadata_counts,
        "metadata_documents": [_document(row) for row in drift.metadata_rows],
        "metadata_omitted": drift.metadata_omitted,
        "unseen": [
            {
                "doc_id": row.doc_id,
                "revision": row.revision,
                "content_hash": row.content_hash,
                "last_seen_run": row.last_seen_run,
                "scope": row.scope,
            }
            for row in drift.unseen
        ],
    }


def refresh_manifest(
    manifest: Manifest,
    warehouse: Warehouse,
    *,
    http: HttpFactory | None = None,
    options: IngestOptions | None = None,
    reporter: Reporter | None = None,
    target: Target | None = None,
    out: Path | None = None,
    prune: bool = False,
    allow_mass_prune: bool = False,
    prune_versions: bool = False,
    drift_limit: int | None = 50,
    progress: PushProgress | None = None,
) -> RefreshResult:
    own_http = http is None
    http = http or HttpFactory(user_agent=USER_AGENT)
    options = options or IngestOptions()
    options.command = "refresh"
    if target is None and out is None:
        check_sanity_configuration()  # a half-configured Sanity fails before any ingest
    try:
        ingested = run_ingest(manifest, warehouse, http=http, options=options, reporter=reporter)
        try:
            published = _publish(
                manifest,
                warehouse,
                ingested.run_id,
                http,
                target,
                out,
                prune,
                allow_mass_prune,
                progress,
                prune_versions,
            )
            result = RefreshResult(
                ingested, _run_drift(warehouse, manifest, ingested, drift_limit), *published
            )
            result.claims, result.claims_error = _check_claims(manifest, warehouse, ingested, http)
        except KeyboardInterrupt as exc:  # after the ingest: its run stays as it finished
            stop = interruption(exc)
            assert stop is not None
            after = stop.summary or "the publish or the checks after it were cut short"
            stop.summary = f"run {ingested.run_id} finished {ingested.status} before it; {after}"
            raise stop from None
        return result
    finally:
        if own_http:
            http.close()


def _run_drift(
    warehouse: Warehouse, manifest: Manifest, ingested: RunResult, limit: int | None
) -> Drift:
    """This run against the corpus's previous finished run (metadata-only changes apart)."""
    since, until = default_points(warehouse, manifest.name, until=Point(run_id=ingested.run_id))
    return compare(
        warehouse, since, until, corpus=manifest.name, limit=limit, metadata=metadata_fields()
    )


def _check_claims(
    manifest: Manifest, warehouse: Warehouse, ingested: RunResult, http: HttpFactory
) -> tuple[ClaimsCheck | None, str | None]:
    """The manifest's ``[claims]`` re-checked after this run (recorded in the ledger); a
    failure to read them is returned as its message."""
    if manifest.claims is None:
        return None, None
    try:
        claims = manifest_claims(manifest, http)
        assert claims is not None
        return check_claims(warehouse, claims, corpus=manifest.name, run_id=ingested.run_id), None
    except (ReceiptsError, HttpError) as exc:
        return None, f"claims not checked: {exc}"


def _publish(
    manifest: Manifest,
    warehouse: Warehouse,
    run_id: int,
    http: HttpFactory,
    target: Target | None,
    out: Path | None,
    prune: bool,
    allow_mass_prune: bool,
    progress: PushProgress | None = None,
    prune_versions: bool = False,
) -> tuple[TargetDrift | None, PushResult | None, str | None]:
    """Target drift, then the push; a failure is returned as its message."""
    opened = target is None
    notices: list[str] = []
    drift: TargetDrift | None = None
    try:
        documents = curate_manifest(manifest, warehouse)
        if target is None:
            target, notices = open_target(manifest.name, http=http, out=out)
        drift = target_drift(warehouse, target, manifest.corpus.namespace, manifest.name, documents)
        pushed = push(
            documents,
            target,
            namespace=manifest.corpus.namespace,
            settings=manifest.publish,
            ledger=warehouse,
            manifest_name=manifest.name,
            run_id=run_id,
            prune=prune,
            allow_mass_prune=allow_mass_prune,
            prune_versions=prune_versions,
            notices=notices,
            progress=progress,
        )
        return drift, pushed, None
    except (ReceiptsError, HttpError) as exc:
        return drift, None, str(exc)
    finally:
        if opened and target is not None:
            target.close()
