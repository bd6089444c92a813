"""Upstream verification: re-download each pinned file and compare it with what was stored.

A commit is immutable, so the bytes served at a pinned commit today must hash to the digest
the warehouse recorded when it saw that (file, commit). The pinned files come from a manifest
(each file at its entry's commit) or, without one, from the warehouse (each GitHub document
at the commit it was last seen at).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipelines.manifest import Manifest
from sources.github.source import (
    DEFAULT_MAX_BYTES,
    RAW,
    GithubClients,
    RateLimitPolicy,
    download_raw,
    file_doc_id,
    raw_file_url,
)
from sources.http import HttpClient, HttpFactory
from warehouse.canonical import content_hash
from warehouse.digests import Progress
from warehouse.errors import RateLimited, SourceError, TerminalHttpError
from warehouse.sightings import digest_at_commit, last_commits
from warehouse.store import Warehouse

MATCH = "match"
MISMATCH = "mismatch"
NOT_STORED = "not stored"
MISSING_UPSTREAM = "missing upstream"
UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class PinnedFile:
    doc_id: str
    repo: str
    path: str
    commit: str
    raw_url: str | None = None
    max_bytes: int = DEFAULT_MAX_BYTES


@dataclass(frozen=True)
class UpstreamCheck:
    file: PinnedFile
    url: str
    status: str
    stored_sha256: str | None
    upstream_sha256: str | None
    detail: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "doc_id": self.file.doc_id,
            "repo": self.file.repo,
            "path": self.file.path,
            "commit": self.file.commit,
            "url": self.url,
            "status": self.status,
            "stored_sha256": self.stored_sha256,
            "upstream_sha256": self.upstream_sha256,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class UpstreamReport:
    checks: list[UpstreamCheck]

    @property
    def failures(self) -> list[UpstreamCheck]:
        return [c for c in self.checks if c.status != MATCH]

    @property
    def ok(self) -> bool:
        return not self.failures

    def as_json(self) -> dict[str, Any]:
        return {
            "checked": len(self.checks),
            "matched": len(self.checks) - len(self.failures),
            "failures": [c.as_json() for c in self.failures],
        }


def files_of_manifest(manifest: Manifest) -> list[PinnedFile]:
    return [
        PinnedFile(
            file_doc_id(entry.repo, file.path),
            entry.repo,
            file.path,
            entry.commit,
            entry.raw_url,
            entry.max_bytes,
        )
        for entry in manifest.entries.get("github", [])
        for file in entry.files
    ]


def files_in_warehouse(warehouse: Warehouse) -> list[PinnedFile]:
    """Each live GitHub document at the commit where it was last seen."""
    out = []
    for seen in last_commits(warehouse, "github"):
        _, owner, name, path = seen.doc_id.split("/", 3)
        out.append(PinnedFile(seen.doc_id, f"{owner}/{name}", path, seen.commit))
    return out


def stored_digest(warehouse: Warehouse, document_id: str, commit: str) -> str | None:
    """The digest of the bytes the warehouse saw for this document at this commit."""
    return digest_at_commit(warehouse, document_id, commit)


def check_file(
    file: PinnedFile, stored: str | None, client: HttpClient, raw_base: str
) -> UpstreamCheck:
    url = raw_file_url(raw_base, file.repo, file.commit, file.path)
    if stored is None:
        return UpstreamCheck(file, url, NOT_STORED, None, None, "never ingested at this commit")
    try:
        body = download_raw(client, url, file.path)
    except RateLimited:
        raise
    except (SourceError, TerminalHttpError) as exc:
        return UpstreamCheck(file, url, UNAVAILABLE, stored, None, str(exc))
    if body is None:
        return UpstreamCheck(file, url, MISSING_UPSTREAM, stored, None, "404 at the pinned commit")
    upstream = content_hash(body)
    return UpstreamCheck(file, url, MATCH if upstream == stored else MISMATCH, stored, upstream)


def verify_upstream(
    warehouse: Warehouse,
    files: list[PinnedFile],
    http: HttpFactory,
    *,
    rate_limits: RateLimitPolicy | None = None,
    progress: Progress | None = None,
) -> UpstreamReport:
    """Re-download every file at its commit and compare with the stored digest;
    ``progress(step, done, total)`` hears of each file."""
    clients = GithubClients(http, rate_limits)
    checks = []
    for file in files:
        client, raw_base = clients.get(RAW, file.raw_url, file.max_bytes)
        stored = stored_digest(warehouse, file.doc_id, file.commit)
        checks.append(check_file(file, stored, client, raw_base))
        if progress is not None:
            progress("pinned files re-downloaded", len(checks), len(files))
    return UpstreamReport(checks)
