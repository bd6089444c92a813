"""Pin drift: which pinned files differ at the ref they track.

For each ``[[github]]`` entry the tracking ref is resolved to its current commit (one
commits-API request per repository and ref). When it is the pinned commit, every file of the
entry is unchanged and no file is downloaded; otherwise each file is downloaded at both
commits and compared byte for byte, so a maintainer sees which pins are stale (and the commit
to move them to) before anyone cites them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipelines.manifest import Manifest
from sources.github.pins import RefResolver
from sources.github.source import (
    RAW,
    GithubClients,
    GithubEntry,
    RateLimitPolicy,
    download_raw,
    file_doc_id,
    raw_file_url,
)
from sources.http import HttpClient, HttpFactory
from warehouse.canonical import content_hash
from warehouse.digests import Progress

UNCHANGED = "unchanged"
CHANGED = "changed"
DELETED = "deleted"
MISSING_AT_PIN = "missing at pin"
STALE = frozenset({CHANGED, DELETED})


@dataclass(frozen=True)
class FileDrift:
    doc_id: str
    repo: str
    path: str
    pinned_commit: str
    ref: str
    ref_commit: str
    status: str
    pinned_sha256: str | None = None
    ref_sha256: str | None = None

    @property
    def stale(self) -> bool:
        return self.status in STALE

    def as_json(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "repo": self.repo,
            "path": self.path,
            "pinned_commit": self.pinned_commit,
            "ref": self.ref,
            "ref_commit": self.ref_commit,
            "status": self.status,
            "pinned_sha256": self.pinned_sha256,
            "ref_sha256": self.ref_sha256,
        }


def drift_status(pinned: bytes | None, current: bytes | None) -> str:
    """Compare a file's bytes at the pin with its bytes at the ref (None: no such file)."""
    if pinned is None:
        return MISSING_AT_PIN
    if current is None:
        return DELETED
    return UNCHANGED if pinned == current else CHANGED


def _digest(body: bytes | None) -> str | None:
    return None if body is None else content_hash(body)


def entry_drift(
    entry: GithubEntry, ref: str, ref_commit: str, raw: HttpClient, raw_base: str
) -> list[FileDrift]:
    """The drift of each file of one entry, given the commit its tracking ref points to."""
    out = []
    for file in entry.files:
        common = {
            "doc_id": file_doc_id(entry.repo, file.path),
            "repo": entry.repo,
            "path": file.path,
            "pinned_commit": entry.commit,
            "ref": ref,
            "ref_commit": ref_commit,
        }
        if ref_commit == entry.commit:
            out.append(FileDrift(**common, status=UNCHANGED))
            continue
        pinned = download_raw(
            raw, raw_file_url(raw_base, entry.repo, entry.commit, file.path), file.path
        )
        current = download_raw(
            raw, raw_file_url(raw_base, entry.repo, ref_commit, file.path), file.path
        )
        out.append(
            FileDrift(
                **common,
                status=drift_status(pinned, current),
                pinned_sha256=_digest(pinned),
                ref_sha256=_digest(current),
            )
        )
    return out


def pin_drift(
    manifest: Manifest,
    http: HttpFactory,
    ref: str = "main",
    *,
    rate_limits: RateLimitPolicy | None = None,
    progress: Progress | None = None,
) -> list[FileDrift]:
    """Every pinned file of the manifest, compared with its bytes at ``ref``;
    ``progress(step, done, total)`` hears of each entry's files."""
    clients = GithubClients(http, rate_limits)
    resolve = RefResolver(clients)
    report: list[FileDrift] = []
    entries = manifest.entries.get("github", [])
    total = sum(len(entry.files) for entry in entries)
    for entry in entries:
        ref_commit = resolve(entry.repo, ref, entry.api_url)
        raw, raw_base = clients.get(RAW, entry.raw_url, entry.max_bytes)
        report.extend(entry_drift(entry, ref, ref_commit, raw, raw_base))
        if progress is not None:
            progress(f"pinned files compared with {ref}", len(report), total)
    return report
