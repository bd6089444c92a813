"""GitHub: files of a repository at a pinned commit.

A ``[[github]]`` entry names a ``repo`` (``owner/name``), a ``commit`` (exactly 40 hex digits:
a branch or tag moves, so it is refused) and its ``files``, each with its curation metadata.
Each file is fetched verbatim from the raw host at that commit and stored under the doc_id
``github/<owner>/<repo>/<path>``, with its git blob SHA-1 beside it.

A pin is immutable, so a file already stored at the same (raw URL, commit) whose digest still
matches what the manifest declares is re-used without any HTTP request.

A file that is fetched is checked against the commit's tree (:mod:`sources.github.commit_tree`);
rate limits are :mod:`sources.github.ratelimit`'s, the HTTP clients :mod:`sources.github.api`'s,
the manifest entry :mod:`sources.github.entry`'s, the stored record
:mod:`sources.github.records`'s and curation :mod:`sources.github.curate`'s.
This module fetches an entry's files and names the source.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sources.base import FetchContext, Source
from sources.github.api import API, RAW, GithubClients, download_raw
from sources.github.commit_tree import CommitTrees, check_against_tree
from sources.github.curate import curate
from sources.github.entry import (
    DEFAULT_MAX_BYTES,
    SOURCE_NAME,
    GithubEntry,
    GithubFile,
    file_doc_id,
    identity,
    raw_file_url,
)
from sources.github.ratelimit import RateLimitPolicy, rate_limit_policy
from sources.github.records import check_file_bytes, file_record
from warehouse.canonical import content_hash
from warehouse.errors import FileRefused, SourceError
from warehouse.records import Listing, Record

_LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"


# -- fetch ---------------------------------------------------------------------------------
def _records(entry: GithubEntry, ctx: FetchContext, refused: list[str]) -> Iterator[Record]:
    raw_base = RAW.base_url(entry.raw_url)
    clients = GithubClients(ctx.http, rate_limit_policy(ctx.options))
    trees = CommitTrees(clients, entry.api_url, entry.repo)
    for file in entry.files:
        url = raw_file_url(raw_base, entry.repo, entry.commit, file.path)
        stored = ctx.lookup(file_doc_id(entry.repo, file.path), url, entry.commit)
        if stored is not None and file.sha256 not in (None, content_hash(stored)):
            stored = None  # the manifest now declares other bytes: ask upstream again
        try:
            if stored is not None:
                body = stored
                where = f"stored bytes of {url}"
            else:
                client, _ = clients.get(RAW, entry.raw_url, entry.max_bytes)
                fetched = download_raw(client, url, file.path)
                if fetched is None:
                    raise FileRefused(f"{file.path}: not found at commit {entry.commit} ({url})")
                body = fetched
                where = url
            check_file_bytes(file, body, where)
            if stored is None:
                check_against_tree(trees, ctx, entry, file, url, body)
        except FileRefused as exc:
            refused.append(str(exc))
            continue
        if body.startswith(_LFS_POINTER):
            ctx.warn(f"{file.path}: the raw host served a Git LFS pointer, not the file itself")
        yield file_record(entry, file, url, body)


def fetch(entry: GithubEntry, ctx: FetchContext) -> Iterable[Listing]:
    """One listing of the entry's files; refused files fail the entry after the rest commit."""
    refused: list[str] = []
    yield Listing(
        scope=f"{SOURCE_NAME}:{entry.repo}",
        records=_records(entry, ctx, refused),
        label=label(entry),
    )
    if refused:
        raise SourceError(
            f"{len(refused)} of {len(entry.files)} files refused: " + "; ".join(refused)
        )


def label(entry: GithubEntry) -> str:
    return f"github {entry.repo}@{entry.commit[:12]} ({len(entry.files)} files)"


SOURCE = Source(
    name=SOURCE_NAME,
    entry_model=GithubEntry,
    label=label,
    fetch=fetch,
    curate=curate,
    identity=identity,
    endpoints=(RAW, API),
)

# What other code imports from here: the source, its endpoints and entry, and what the
# pin-drift and upstream-verify checks reuse to fetch a file again.
__all__ = [
    "API",
    "DEFAULT_MAX_BYTES",
    "RAW",
    "SOURCE",
    "GithubClients",
    "GithubEntry",
    "GithubFile",
    "RateLimitPolicy",
    "download_raw",
    "file_doc_id",
    "raw_file_url",
]
