"""Upstream verification: re-download each pinned file and compare it with what was stored.

A commit is immutable, so the bytes served at a pinned commit today must hash to the digest
the warehouse recorded when it saw that (file, commit). The pinned files come from a manifest
(each file at its entry's commit) or, without one, from the warehouse (each GitHub document
at the commit it was last seen at).

A path that is not a file's content (a symlink, a submodule, a Git LFS pointer) is stored as
the record of what it is (:mod:`sources.github.entry_kinds`); its check rebuilds that record
from what GitHub serves today: a symlink's target and an LFS pointer from the raw host's
answer, a submodule's commit from the commit's tree (the raw host has no file for it, so
that costs one git trees request per commit, asked only when the raw host answers 404).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipelines.manifest import Manifest
from sources.github.commit_tree import CommitTree, fetch_tree, tree_url
from sources.github.entry_kinds import SUBMODULE_MODE, lfs, submodule, symlink
from sources.github.source import (
    API,
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
    api_url: str | None = None


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
            entry.api_url,
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


def upstream_digest(path: str, body: bytes, stored: str) -> str:
    """The digest of what GitHub serves for ``path``, as the warehouse would store it: the
    bytes' own, or the symlink or LFS pointer record rebuilt from them when that is what
    was stored."""
    upstream = content_hash(body)
    if upstream == stored:
        return upstream
    for record in (symlink(path, body), lfs(path, body)):
        if record is not None and content_hash(record.body) == stored:
            return stored
    return upstream


def submodule_digest(tree: CommitTree, path: str) -> str | None:
    """The digest of the submodule record for ``path`` in the commit's tree, or None when
    the tree does not list a submodule there."""
    found = tree.entries.get(path)
    if found is None or found.mode != SUBMODULE_MODE or found.type != "commit":
        return None
    return content_hash(submodule(path, found.sha).body)


def check_file(
    file: PinnedFile,
    stored: str | None,
    client: HttpClient,
    raw_base: str,
    tree_of: Callable[[PinnedFile], CommitTree] | None = None,
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
        found = submodule_digest(tree_of(file), file.path) if tree_of is not None else None
        if found is not None:
            status = MATCH if found == stored else MISMATCH
            return UpstreamCheck(file, url, status, stored, found, "a submodule")
        return UpstreamCheck(file, url, MISSING_UPSTREAM, stored, None, "404 at the pinned commit")
    upstream = upstream_digest(file.path, body, stored)
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
    trees: dict[tuple[str | None, str, str], CommitTree] = {}

    def tree_of(file: PinnedFile) -> CommitTree:
        key = (file.api_url, file.repo, file.commit)
        if key not in trees:
            client, api_base = clients.get(API, file.api_url)
            trees[key] = fetch_tree(client, tree_url(api_base, file.repo, file.commit))
        return trees[key]

    checks = []
    for file in files:
        client, raw_base = clients.get(RAW, file.raw_url, file.max_bytes)
        stored = stored_digest(warehouse, file.doc_id, file.commit)
        checks.append(check_file(file, stored, client, raw_base, tree_of))
        if progress is not None:
            progress("pinned files re-downloaded", len(checks), len(files))
    return UpstreamReport(checks)
