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
from sources.github.api import API, RAW, GithubClients, download_raw, fetch_raw
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
from sources.github.entry_kinds import (
    SUBMODULE,
    SYMLINK,
    SYMLINK_MODE,
    NonFile,
    lfs,
    stored_non_file,
    submodule,
    symlink,
)
from sources.github.ratelimit import RateLimitPolicy, rate_limit_policy
from sources.github.reach import check_reachable
from sources.github.records import check_file_bytes, file_record, non_file_record
from warehouse.canonical import content_hash
from warehouse.errors import FileRefused, SourceError
from warehouse.records import Listing, Record


# -- fetch ---------------------------------------------------------------------------------
def _stored(entry: GithubEntry, file: GithubFile, ctx: FetchContext, url: str) -> bytes | None:
    """The bytes stored for the file at this pin, unless the manifest now declares others."""
    stored = ctx.lookup(file_doc_id(entry.repo, file.path), url, entry.commit)
    if stored is None or file.sha256 in (None, content_hash(stored)):
        return stored
    if stored_non_file(file.path, stored) is not None:
        return stored  # a declared digest is checked against what the entry is, below
    return None  # the manifest now declares other bytes: ask upstream again


def _non_file_digest(file: GithubFile, record: NonFile) -> None:
    """A declared sha256 is a file's: it holds for an LFS pointer whose object has that
    digest (an LFS oid is the SHA-256 of the object), and for nothing else."""
    if file.sha256 is None or dict(record.fields).get("oid") == f"sha256:{file.sha256}":
        return
    raise FileRefused(
        f"{file.path}: declared sha256 {file.sha256} is a file's, but at this commit the path "
        f"is {record.describe()}; nothing was stored"
    )


def _fetched(
    entry: GithubEntry,
    file: GithubFile,
    ctx: FetchContext,
    clients: GithubClients,
    trees: CommitTrees,
    url: str,
) -> tuple[NonFile | None, bytes]:
    """What the path is at the commit, from the raw host and the commit's tree: a non-file
    entry and the bytes git holds for it, or None and the file's bytes (checked)."""
    client, _ = clients.get(RAW, entry.raw_url, entry.max_bytes)
    answer = fetch_raw(client, url, file.path)
    if answer is None:
        found = trees.get(entry.commit).entries.get(file.path)
        if found is not None and found.type == "commit":
            return submodule(file.path, found.sha), b""
        raise FileRefused(f"{file.path}: not found at commit {entry.commit} ({url})")
    listed = check_against_tree(trees, ctx, entry, file, url, answer)
    body = answer.body
    if listed is not None and listed.mode == SYMLINK_MODE:
        link = symlink(file.path, body)
        if link is None:
            raise FileRefused(f"{file.path}: a symlink whose target is not UTF-8; nothing stored")
        return link, body
    pointer = lfs(file.path, body)
    if pointer is not None:
        return pointer, body
    check_file_bytes(file, body, url)
    return None, body


def _records(entry: GithubEntry, ctx: FetchContext, refused: list[str]) -> Iterator[Record]:
    raw_base = RAW.base_url(entry.raw_url)
    clients = GithubClients(ctx.http, rate_limit_policy(ctx.options))
    trees = CommitTrees(clients, entry.api_url, entry.repo)
    checked = False
    for file in entry.files:
        url = raw_file_url(raw_base, entry.repo, entry.commit, file.path)
        stored = _stored(entry, file, ctx, url)
        try:
            if stored is not None:
                body = stored
                what = stored_non_file(file.path, stored)
                git_bytes: bytes | None = None
                if what is not None and what.kind == SYMLINK:
                    git_bytes = dict(what.fields)["target"].encode("utf-8")
                elif what is None:
                    what, git_bytes = lfs(file.path, stored), stored  # stored as a file before
                    if what is None:
                        check_file_bytes(file, body, f"stored bytes of {url}")
            else:
                if not checked:  # the pin's repository, asked once and only when fetching
                    check_reachable(clients, entry, ctx)
                    checked = True
                what, body = _fetched(entry, file, ctx, clients, trees, url)
                git_bytes = body if what is not None and what.kind != SUBMODULE else None
            if what is not None:
                _non_file_digest(file, what)
        except FileRefused as exc:
            refused.append(str(exc))
            continue
        if what is None:
            yield file_record(entry, file, url, body)
            continue
        ctx.warn(
            f"{file.path}: at commit {entry.commit} of {entry.repo} this is {what.describe()}, "
            f"not a file's content; stored as a {what.kind} record ({what.media_type})"
        )
        yield non_file_record(entry, file, url, what, git_bytes)


def fetch(entry: GithubEntry, ctx: FetchContext) -> Iterable[Listing]:
    """One listing of the entry's files; refused files fail the entry after the rest commit.
    A pin its repository does not hold fails the entry before anything is stored."""
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
