"""GitHub: files of a repository at a pinned commit.

A ``[[github]]`` entry names a ``repo`` (``owner/name``), a ``commit`` (exactly 40 hex digits:
a branch or tag moves, so it is refused) and its ``files``, each with its curation metadata.
Each file is fetched verbatim from the raw host at that commit and stored under the doc_id
``github/<owner>/<repo>/<path>``, with its git blob SHA-1 beside it.

A pin is immutable, so a file already stored at the same (raw URL, commit) whose digest still
matches what the manifest declares is re-used without any HTTP request.

A file that is fetched is checked against the commit's own record of it: the git trees API
(one request per commit, only when a file is fetched) gives each path's git blob SHA-1, and
bytes whose blob SHA-1 differs (an HTML error page the raw host answered with 200) are
refused and not stored, so the next run asks for them again. Without the tree (a rate limit,
no API access, a truncated tree that does not list the path) the file is stored as served,
with a warning.

Rate limits: ``GITHUB_TOKEN`` (when set) is sent as a bearer token, but only to the base URLs
of the environment or the defaults, never to one that only a manifest names. When GitHub
answers 403/429 for a rate limit, the wait is its ``retry-after``, else the time until
``x-ratelimit-reset`` when ``x-ratelimit-remaining`` is 0, else at least one minute (doubling
while the limit persists). The client waits when that is at most
``RECEIPTS_GITHUB_MAX_RATE_WAIT`` seconds (default 60); otherwise the entry fails at once
with the time at which to retry.
"""

from __future__ import annotations

import os
import posixpath
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal
from urllib.parse import quote

import httpx
from pydantic import Field, StrictInt, field_validator, model_validator

from sources.base import Curated, CurationInput, FetchContext, Source, StrictModel
from sources.digits import is_ascii_digits
from sources.http import Endpoint, HttpClient, HttpFactory, checked_base_url, parse_retry_after
from warehouse.canonical import content_hash, git_blob_sha1
from warehouse.clock import now
from warehouse.errors import (
    BodyTooLarge,
    FileRefused,
    HttpError,
    IntegrityError,
    ParseError,
    RateLimited,
    SourceError,
    TransientHttpError,
)
from warehouse.ids import doc_id
from warehouse.records import Listing, Provenance, Record

SOURCE_NAME = "github"
SOURCE_FORMAT = "github:raw"
ENV_TOKEN = "GITHUB_TOKEN"
ENV_MAX_RATE_WAIT = "RECEIPTS_GITHUB_MAX_RATE_WAIT"
DEFAULT_MAX_RATE_WAIT = 60.0
DEFAULT_MAX_BYTES = 20 * 1024 * 1024
# FetchContext.options key under which a run may pass a RateLimitPolicy (tests, embedders).
RATE_LIMIT_OPTION = "github_rate_limit"
WEB_URL = "https://github.com"
# Raw file bytes at a commit, and the REST API (commits, refs); an entry's ``raw_url`` /
# ``api_url`` may name a mirror.
RAW = Endpoint("github_raw", "https://raw.githubusercontent.com", "RECEIPTS_GITHUB_RAW_URL")
API = Endpoint("github_api", "https://api.github.com", "RECEIPTS_GITHUB_API_URL")

Lifecycle = Literal["published", "historical", "unreleased", "draft"]
Format = Literal["markdown", "text", "json", "yaml", "toml", "csv", "html", "xml", "pdf", "binary"]

# Declared format → (media type of the stored snapshot, whether the bytes must be UTF-8 text).
FORMATS: dict[str, tuple[str, bool]] = {
    "markdown": ("text/markdown", True),
    "text": ("text/plain", True),
    "json": ("application/json", True),
    "yaml": ("application/yaml", True),
    "toml": ("application/toml", True),
    "csv": ("text/csv", True),
    "html": ("text/html", True),
    "xml": ("application/xml", True),
    "pdf": ("application/pdf", False),
    "binary": ("application/octet-stream", False),
}

_SHA1_HEX = re.compile(r"^[0-9a-fA-F]{40}\Z")
_SHORT_HEX = re.compile(r"^[0-9a-fA-F]{4,39}\Z")
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}\Z")
_REPO = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}\Z")
_LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"


# -- manifest ------------------------------------------------------------------------------
def path_problem(path: str) -> str | None:
    """Why ``path`` is not a safe, normalised repository path, or None when it is."""
    if not path:
        return "is empty"
    if "\\" in path:
        return "contains a backslash; use '/' between folders"
    if path.startswith("/"):
        return "is absolute; give it relative to the repository root"
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in path):
        return "contains whitespace or a control character"
    segments = path.split("/")
    if ".." in segments:
        return "contains '..'"
    if posixpath.normpath(path) != path or "." in segments or "" in segments:
        return f"is not normalised (write {posixpath.normpath(path)!r})"
    return None


def commit_problem(commit: str) -> str | None:
    """Why ``commit`` is not a pinned commit SHA, or None when it is."""
    if _SHA1_HEX.match(commit):
        return None
    how = "run `receipts pin MANIFEST --ref <branch or tag>` to write the commit it points to"
    if _SHORT_HEX.match(commit):
        return f"{commit!r} is an abbreviated SHA; pin the full 40-hex commit: {how}"
    return (
        f"{commit!r} is not a commit SHA (exactly 40 hex digits); a branch or tag name moves, "
        f"so it is refused: {how}"
    )


class GithubFile(StrictModel):
    """One pinned file and its curation metadata."""

    path: str
    sha256: str | None = None
    kind: str = Field(min_length=1)
    format: Format
    license: str | None = None
    lifecycle: Lifecycle
    authority_rank: StrictInt | None = Field(default=None, ge=0, le=100)
    authority_domains: list[str] = Field(default_factory=list)
    version_scope: list[str] = Field(default_factory=list)

    @field_validator("path")
    @classmethod
    def _safe_path(cls, value: str) -> str:
        problem = path_problem(value)
        if problem:
            raise ValueError(f"path {value!r} {problem}")
        return value

    @field_validator("sha256")
    @classmethod
    def _hex_digest(cls, value: str | None) -> str | None:
        if value is not None and not _SHA256_HEX.match(value):
            raise ValueError("sha256 must be 64 lowercase hex digits")
        return value

    @property
    def media_type(self) -> str:
        return FORMATS[self.format][0]

    @property
    def is_text(self) -> bool:
        return FORMATS[self.format][1]


class GithubEntry(StrictModel):
    """A ``[[github]]`` entry: files of one repository at one pinned commit."""

    repo: str
    commit: str
    files: list[GithubFile] = Field(min_length=1)
    raw_url: str | None = None
    api_url: str | None = None
    max_bytes: StrictInt = Field(default=DEFAULT_MAX_BYTES, ge=1, le=100 * 1024 * 1024)

    _base_url = field_validator("raw_url", "api_url")(checked_base_url)

    @field_validator("repo")
    @classmethod
    def _owner_and_name(cls, value: str) -> str:
        if not _REPO.match(value) or value.split("/")[1] in (".", ".."):
            raise ValueError(f"repo {value!r} must be 'owner/name', e.g. 'octocat/hello-world'")
        return value

    @field_validator("commit")
    @classmethod
    def _pinned(cls, value: str) -> str:
        problem = commit_problem(value)
        if problem:
            raise ValueError(problem)
        return value.lower()

    @model_validator(mode="after")
    def _paths_unique(self) -> GithubEntry:
        seen: set[str] = set()
        for file in self.files:
            if file.path in seen:
                raise ValueError(f"path {file.path!r} is listed twice")
            seen.add(file.path)
        return self

    @property
    def owner(self) -> str:
        return self.repo.split("/")[0]

    @property
    def name(self) -> str:
        return self.repo.split("/")[1]


# -- identities and URLs (pure) ------------------------------------------------------------
def file_doc_id(repo: str, path: str) -> str:
    owner, name = repo.split("/")
    return doc_id(SOURCE_NAME, owner, name, path)


def raw_file_url(raw_base: str, repo: str, commit: str, path: str) -> str:
    """The raw URL of ``path`` at ``commit``."""
    return f"{raw_base}/{repo}/{commit}/{quote(path, safe='/')}"


def web_file_url(repo: str, commit: str, path: str) -> str:
    """The github.com page of ``path`` at ``commit``: a citation that never moves."""
    return f"{WEB_URL}/{repo}/blob/{commit}/{quote(path, safe='/')}"


def identity(document_id: str) -> tuple[str, str]:
    """``github/<owner>/<repo>/<path>`` → (``file``, ``<owner>/<repo>/<path>``)."""
    return "file", document_id.split("/", 1)[1]


# -- checking bytes (pure) -----------------------------------------------------------------
def check_file_bytes(file: GithubFile, body: bytes, where: str) -> None:
    """Refuse bytes that do not match the declared digest, or are not strict UTF-8 text."""
    if file.sha256 is not None:
        actual = content_hash(body)
        if actual != file.sha256:
            raise FileRefused(
                f"{file.path}: sha256 {actual} does not match the declared {file.sha256} "
                f"({where}); nothing was stored"
            )
    if file.is_text:
        try:
            body.decode("utf-8", errors="strict")
        except UnicodeDecodeError as exc:
            raise FileRefused(
                f"{file.path}: declared format {file.format!r} but the bytes are not strict "
                f'UTF-8 (byte {exc.start}); declare format = "binary" if that is intended'
            ) from None


def file_record(entry: GithubEntry, file: GithubFile, url: str, body: bytes) -> Record:
    return Record(
        doc_id=file_doc_id(entry.repo, file.path),
        kind="file",
        body=body,
        media_type=file.media_type,
        provenance=Provenance(
            url=url, commit=entry.commit, source_format=SOURCE_FORMAT, fetched_at=now()
        ),
        attributes={"git_blob_sha1": git_blob_sha1(body), "format": file.format},
    )


# -- HTTP ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class RateLimitPolicy:
    """How long a rate-limited request may wait for the reset, and the clock it reads."""

    max_wait: float = DEFAULT_MAX_RATE_WAIT
    clock: Callable[[], float] = time.time

    @classmethod
    def from_env(cls) -> RateLimitPolicy:
        value = os.environ.get(ENV_MAX_RATE_WAIT)
        if not value:
            return cls()
        try:
            seconds = float(value)
        except ValueError:
            raise SourceError(f"{ENV_MAX_RATE_WAIT} must be a number of seconds") from None
        return cls(max_wait=max(0.0, seconds))


def rate_limit_policy(options: dict[str, object]) -> RateLimitPolicy:
    given = options.get(RATE_LIMIT_OPTION)
    return given if isinstance(given, RateLimitPolicy) else RateLimitPolicy.from_env()


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _utc(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


SECONDARY_MIN_WAIT = 60.0  # GitHub: with no retry-after and no reset, wait at least 1 min


@dataclass
class RateLimitStreak:
    """Rate-limited answers in a row on one client, reset by any other answer: a limit
    that persists is waited out longer each time (GitHub: "back off exponentially")."""

    count: int = 0


def _is_rate_limit_body(response: httpx.Response) -> bool:
    """A 403 whose body says it is a (secondary) rate limit, not a plain refusal."""
    return b"rate limit" in response.content[:4096].lower()


def rate_limit_verdict(
    response: httpx.Response,
    policy: RateLimitPolicy,
    authenticated: bool,
    streak: RateLimitStreak | None = None,
) -> HttpError | None:
    """Classify a 403/429 that is a rate limit: wait if it lifts soon enough, else fail.

    GitHub's rule, in order: a ``retry-after`` says how long to wait; else
    ``x-ratelimit-remaining: 0`` says to wait until ``x-ratelimit-reset`` (epoch seconds);
    else (a secondary limit may come with requests remaining, the raw host's 429 with no
    header at all) wait at least one minute, doubling while the limit persists. A wait past
    ``policy.max_wait`` fails the entry at once with the time to retry: the raw host's
    blocks can last tens of minutes. A 429 is never retried on a short backoff.
    """
    status = response.status_code
    if status not in (403, 429):
        if streak is not None:
            streak.count = 0
        return None
    headers = response.headers
    url = str(response.request.url)
    clock = policy.clock()
    retry_after = parse_retry_after(headers.get("retry-after"), now=clock)
    reset_header = headers.get("x-ratelimit-reset", "").strip()
    if retry_after is not None:
        wait = retry_after
        how = f"retry-after {retry_after:.0f} s"
    elif headers.get("x-ratelimit-remaining") == "0" and is_ascii_digits(reset_header):
        wait = max(0.0, float(reset_header) - clock) + 1.0
        how = ""
    elif status == 429 or _is_rate_limit_body(response):
        times = streak.count if streak is not None else 0
        wait = SECONDARY_MIN_WAIT * (2**times)
        how = "no reset given" + (f", limited {times + 1} times in a row" if times else "")
    else:
        return None
    if streak is not None:
        streak.count += 1
    limit = headers.get("x-ratelimit-limit")
    resource = headers.get("x-ratelimit-resource")
    details = ", ".join(
        part
        for part in (
            f"resource {resource}" if resource else "",
            f"limit {limit}" if limit else "",
            how,
        )
        if part
    )
    what = f"GitHub rate limit (HTTP {status})" if how else "GitHub rate limit exhausted"
    what += f" ({details})" if details else ""
    if wait <= policy.max_wait:
        return TransientHttpError(
            f"github: {what} for {url}; waiting {wait:.0f} s", url, status, retry_after=wait
        )
    hint = "" if authenticated else f", or set {ENV_TOKEN} for a higher limit"
    return RateLimited(
        f"github: {what} for {url}; it lifts at {_utc(clock + wait)} at the earliest "
        f"(in {_duration(wait)}), more than {ENV_MAX_RATE_WAIT}={policy.max_wait:.0f} s "
        f"away: retry after that{hint}"
        if how
        else f"github: {what} for {url}; it resets at {_utc(clock + wait - 1.0)} "
        f"(in {_duration(wait)}): retry after that{hint}",
        url,
        status,
    )


def github_client(
    http: HttpFactory,
    endpoint: Endpoint,
    manifest_value: str | None = None,
    *,
    max_bytes: int | None = None,
    rate_limits: RateLimitPolicy | None = None,
) -> tuple[HttpClient, str]:
    """A client for one GitHub endpoint family (:data:`RAW` or :data:`API`) and its base
    URL. The token goes only to a base URL that the manifest did not choose."""
    base = endpoint.base_url(manifest_value)
    rate_limits = rate_limits or RateLimitPolicy.from_env()
    token = os.environ.get(ENV_TOKEN, "").strip()
    headers: dict[str, str] = {}
    if token and base == endpoint.base_url():
        headers["Authorization"] = f"Bearer {token}"
    if endpoint == API:
        headers["Accept"] = "application/vnd.github+json"
        headers["X-GitHub-Api-Version"] = "2022-11-28"
    authenticated = "Authorization" in headers
    policy = replace(
        http.policy,
        max_body_bytes=max_bytes or http.policy.max_body_bytes,
        max_retry_after=max(http.policy.max_retry_after, rate_limits.max_wait + 1.0),
    )
    streak = RateLimitStreak()
    client = http.client(
        SOURCE_NAME,
        [base],
        headers=headers,
        policy=policy,
        classify=lambda response: rate_limit_verdict(response, rate_limits, authenticated, streak),
    )
    return client, base


class GithubClients:
    """One client per (endpoint family, manifest base URL, size cap), built on first use, so
    work that needs no request builds none."""

    def __init__(self, http: HttpFactory, rate_limits: RateLimitPolicy | None = None) -> None:
        self.http = http
        self.rate_limits = rate_limits
        self._built: dict[tuple[Endpoint, str | None, int | None], tuple[HttpClient, str]] = {}

    def get(
        self, endpoint: Endpoint, manifest_value: str | None = None, max_bytes: int | None = None
    ) -> tuple[HttpClient, str]:
        key = (endpoint, manifest_value, max_bytes)
        if key not in self._built:
            self._built[key] = github_client(
                self.http,
                endpoint,
                manifest_value,
                max_bytes=max_bytes,
                rate_limits=self.rate_limits,
            )
        return self._built[key]


def download_raw(client: HttpClient, url: str, path: str) -> bytes | None:
    """The raw bytes at ``url``; None when the file does not exist there (404)."""
    try:
        response = client.get(url, ok=(200, 404))
    except BodyTooLarge as exc:
        raise FileRefused(f"{path}: {exc}") from None
    if response.status_code == 404:
        return None
    return response.content


# -- the commit's tree ----------------------------------------------------------------------
@dataclass(frozen=True)
class TreeEntry:
    """One path of a commit's tree, as the git trees API lists it."""

    path: str
    type: str
    mode: str
    sha: str
    size: int | None


@dataclass(frozen=True)
class CommitTree:
    """A commit's tree (``entries`` by path, ``truncated`` when the API cut it short), or why
    it could not be had (``unavailable``)."""

    url: str
    entries: dict[str, TreeEntry]
    truncated: bool = False
    unavailable: str | None = None


def tree_url(api_base: str, repo: str, commit: str) -> str:
    return f"{api_base}/repos/{repo}/git/trees/{commit}"


def parse_tree(data: object, url: str) -> CommitTree:
    """A git trees API answer: ``{"tree": [{"path", "type", "mode", "sha", "size"}],
    "truncated"}``; another shape is a :class:`ParseError` naming what was wrong."""
    if not isinstance(data, dict) or not isinstance(data.get("tree"), list):
        raise ParseError(f"github: {url}: no 'tree' list in the answer")
    entries: dict[str, TreeEntry] = {}
    for index, item in enumerate(data["tree"]):
        if not isinstance(item, dict) or not all(
            isinstance(item.get(k), str) for k in ("path", "type", "sha")
        ):
            raise ParseError(f"github: {url}: tree[{index}] has no path, type and sha")
        size = item.get("size")
        entries[item["path"]] = TreeEntry(
            item["path"],
            item["type"],
            str(item.get("mode", "")),
            item["sha"].lower(),
            size if isinstance(size, int) and not isinstance(size, bool) else None,
        )
    return CommitTree(url, entries, truncated=data.get("truncated") is True)


def fetch_tree(client: HttpClient, url: str) -> CommitTree:
    """The commit's tree, recursive; an answer that is not one makes it ``unavailable``."""
    try:
        _, data = client.get_json(url, params={"recursive": "1"})
        return parse_tree(data, url)
    except (HttpError, ParseError, IntegrityError) as exc:
        return CommitTree(url, {}, unavailable=str(exc))


def tree_problem(tree: CommitTree, path: str, commit: str, url: str, body: bytes) -> str | None:
    """Why ``body`` is not the file ``path`` of the commit's tree (a refusal), or None."""
    if tree.unavailable is not None:
        return None
    found = tree.entries.get(path)
    if found is None:
        if tree.truncated:
            return None
        return (
            f"{path}: not in the tree of commit {commit} ({tree.url}), yet {url} answered "
            f"{len(body)} bytes; nothing was stored"
        )
    if found.type != "blob" or found.mode == "120000":
        return None
    actual = git_blob_sha1(body)
    if actual == found.sha:
        return None
    size = "" if found.size is None else f" ({found.size} bytes)"
    return (
        f"{path}: git blob SHA-1 {actual} ({len(body)} bytes) does not match {found.sha}{size} "
        f"in the tree of commit {commit} ({url}); nothing was stored, it is fetched again "
        "next run"
    )


def tree_unchecked(tree: CommitTree, path: str, commit: str) -> str | None:
    """Why ``path`` cannot be checked against the commit's tree (a warning), or None."""
    if tree.unavailable is not None:
        reason = tree.unavailable
    elif path not in tree.entries:
        if not tree.truncated:
            return None
        reason = f"the tree of commit {commit} is truncated and does not list {path}"
    elif tree.entries[path].type != "blob" or tree.entries[path].mode == "120000":
        found = tree.entries[path]
        reason = f"{path} is a {found.type} (mode {found.mode}) in the tree of commit {commit}"
    else:
        return None
    return reason


class CommitTrees:
    """The trees of the commits one fetch needs, each asked for once and only on first use;
    the files it could not check are warned about once per commit."""

    def __init__(self, clients: GithubClients, api_url: str | None, repo: str) -> None:
        self.clients = clients
        self.api_url = api_url
        self.repo = repo
        self._trees: dict[str, CommitTree] = {}
        self.warned: set[str] = set()

    def get(self, commit: str) -> CommitTree:
        if commit not in self._trees:
            client, api_base = self.clients.get(API, self.api_url)
            self._trees[commit] = fetch_tree(client, tree_url(api_base, self.repo, commit))
        return self._trees[commit]


def check_against_tree(
    trees: CommitTrees,
    ctx: FetchContext,
    entry: GithubEntry,
    file: GithubFile,
    url: str,
    body: bytes,
) -> None:
    """Refuse fetched bytes the commit's tree says are not the file; warn when they cannot be
    checked (they are stored as served, as before this check existed)."""
    tree = trees.get(entry.commit)
    problem = tree_problem(tree, file.path, entry.commit, url, body)
    if problem:
        raise FileRefused(problem)
    if tree.unavailable is not None:
        if entry.commit not in trees.warned:  # once per commit: the reason is the same
            trees.warned.add(entry.commit)
            ctx.warn(
                f"github {entry.repo}@{entry.commit}: files fetched in this run are stored as "
                f"served, not checked against the commit's tree ({tree.unavailable}); "
                "`receipts verify --upstream` re-downloads them later"
            )
        return
    unchecked = tree_unchecked(tree, file.path, entry.commit)
    if unchecked:
        ctx.warn(
            f"{file.path}: stored as served by {url}, not checked against the commit's tree "
            f"({unchecked}); `receipts verify --upstream` re-downloads it later"
        )


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


# -- curation ------------------------------------------------------------------------------
def find_file(
    document_id: str, entries: list[GithubEntry], commit: str | None
) -> tuple[GithubEntry, GithubFile]:
    """The manifest entry and file of a doc_id; with several pins, the one at ``commit``."""
    found = [
        (entry, file)
        for entry in entries
        for file in entry.files
        if file_doc_id(entry.repo, file.path) == document_id
    ]
    if not found:
        raise SourceError(f"{document_id} is not declared in any [[github]] entry")
    at_commit = [pair for pair in found if pair[0].commit == commit]
    return (at_commit or found)[-1]


def curate(doc: CurationInput, entries: list[GithubEntry]) -> Curated:
    """A ``sourceDocument``: where the file is, its bytes' digests, its text, its metadata."""
    commit = doc.provenance.get("commit")
    entry, file = find_file(doc.doc_id, entries, commit)
    commit = commit or entry.commit
    fields: dict[str, object] = {
        "repo": entry.repo,
        "path": file.path,
        "commit": commit,
        "url": web_file_url(entry.repo, commit, file.path),
        "rawUrl": doc.provenance.get("url"),
        "format": file.format,
        "sha256": doc.content_hash,
        "gitBlobSha1": git_blob_sha1(doc.body),
        "size": len(doc.body),
        "kind": file.kind,
        "license": file.license,
        "lifecycleStatus": file.lifecycle,
        "authorityRank": file.authority_rank,
        "authorityDomains": list(file.authority_domains),
        "versionScope": list(file.version_scope),
    }
    if file.is_text:
        fields["text"] = doc.body.decode("utf-8")
    return Curated(type="sourceDocument", fields={k: v for k, v in fields.items() if v is not None})


SOURCE = Source(
    name=SOURCE_NAME,
    entry_model=GithubEntry,
    label=label,
    fetch=fetch,
    curate=curate,
    identity=identity,
    endpoints=(RAW, API),
)

__all__ = ["API", "RAW", "SOURCE", "GithubEntry", "GithubFile"]
