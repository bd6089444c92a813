"""A stateful fake of GitHub: the raw file host and the commits API, served through respx.

Repositories hold commits (each a whole tree of path → bytes, with a parent) and refs
(branches and tags). ``push`` makes a new commit on a branch; the raw host serves a file at
a branch, a tag or a full commit SHA; ``GET /repos/{owner}/{repo}/commits/{ref}`` resolves a
ref (as the bare SHA with ``Accept: application/vnd.github.sha``, else as JSON), answering
404 for an unknown repository and 422 for an unknown ref, with GitHub's error bodies.
``GET /repos/{owner}/{repo}/git/trees/{ref}?recursive=1`` lists the commit's tree as the
git trees API does: every blob and folder with ``path``, ``mode``, ``type``, ``sha`` (the git
blob SHA-1 of the bytes the fake stores) and, for blobs, ``size``; with ``tree_limit`` set,
only that many entries and ``truncated: true``.

Tree entries have the modes and types of GitHub's git trees API (github/rest-api-description,
"Create a tree": ``100644``/``100755`` blob, ``040000`` tree, ``120000`` a blob holding a
symlink's path, ``160000`` a submodule, ``type: commit``, whose ``sha`` is its commit): push
:class:`Executable`, :class:`Symlink` or :class:`Submodule` values. The raw host serves a
symlink's target path as ``text/plain`` and answers 404 for a submodule. :func:`lfs_pointer`
writes a Git LFS pointer file as git-lfs's spec defines it.

``fork(parent, name)`` makes a fork that shares the parent's objects, as a fork network does:
a commit pushed to the fork is served under the parent's URLs too (raw host, commits and trees
APIs). ``GET /repos/{owner}/{repo}`` gives ``default_branch``, and ``GET
/repos/{owner}/{repo}/compare/{base}...{head}`` the ``status`` of head against base
(``identical``, ``behind``, ``ahead``, ``diverged``, docs.github.com/rest/commits/commits
#compare-two-commits) with ``ahead_by``/``behind_by``; 404 for a head the network lacks.

``html_page(path)`` makes the raw host answer the next requests for ``path`` with 200 and an
HTML error page instead of the file (a CDN or proxy page served as if it were the file).

Rate limits, as GitHub documents them for the REST API: every request spends one from its
caller's hourly bucket (60 anonymous, 5,000 with the valid token; a wrong token is 401 "Bad
credentials"), each response carries ``x-ratelimit-*`` headers, and an empty bucket answers
403 (API) or 429 (raw) with ``x-ratelimit-remaining: 0`` until the reset, read from the
fake's clock. ``secondary_limit`` makes the next API answers 403 with ``retry-after`` (or,
with ``retry_after=None``, a 403 that only its message marks as a secondary limit, with
requests still remaining). ``block_raw`` makes the raw host answer a bare 429 (no
``retry-after``, no ``x-ratelimit-*``) until the fake's clock passes the block's end, as
raw.githubusercontent.com does since 2025-05 for blocks of up to about thirty minutes.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

import httpx
import respx

from sources.github import source as github

# Served at the source's own default base URLs (no environment needed).
RAW = github.RAW.default_url
API = github.API.default_url
WINDOW = 3600
DOCS = "https://docs.github.com/rest"
HTML_ERROR_PAGE = (
    b"<!DOCTYPE html>\n<html><head><title>Unicorn! \xc2\xb7 GitHub</title></head>\n"
    b"<body><p>No server is currently available to service your request.</p></body></html>\n"
)


def blob_sha1(body: bytes) -> str:
    """What ``git hash-object`` gives for ``body`` (computed here, not by the code under test)."""
    return hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()


class FakeClock:
    """Epoch seconds that only move when something sleeps."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@dataclass(frozen=True)
class Executable:
    """A file with mode ``100755``."""

    body: bytes


@dataclass(frozen=True)
class Symlink:
    """A tree entry with mode ``120000``: a blob holding the link's target path."""

    target: str


@dataclass(frozen=True)
class Submodule:
    """A tree entry with mode ``160000``, ``type: commit``: the submodule's commit."""

    commit: str


Entry = bytes | Executable | Symlink | Submodule


def lfs_pointer(content: bytes) -> bytes:
    """The pointer git holds for ``content`` kept in Git LFS: the spec's version line, then
    ``oid sha256:<hex>`` and ``size <bytes>`` (https://github.com/git-lfs/git-lfs/blob/main/
    docs/spec.md)."""
    oid = hashlib.sha256(content).hexdigest()
    return (
        b"version https://git-lfs.github.com/spec/v1\n"
        + f"oid sha256:{oid}\nsize {len(content)}\n".encode()
    )


def _git_bytes(value: Entry) -> bytes | None:
    """The blob git holds for an entry (None for a submodule, which is a commit)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, Executable):
        return value.body
    if isinstance(value, Symlink):
        return value.target.encode()
    return None


def _seed_bytes(value: Entry) -> bytes:
    return value if isinstance(value, bytes) else repr(value).encode()


@dataclass
class Commit:
    sha: str
    tree: dict[str, Entry]
    parent: str | None
    message: str


@dataclass
class Repo:
    commits: dict[str, Commit] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    default_branch: str = "main"
    network: str = ""


@dataclass
class Bucket:
    limit: int
    remaining: int
    reset: int


@dataclass
class FakeGitHub:
    raw_base: str = RAW
    api_base: str = API
    clock: Callable[[], float] = time.time
    token: str | None = None
    anonymous_limit: int = 60
    token_limit: int = 5_000
    tree_limit: int | None = None
    repos: dict[str, Repo] = field(default_factory=dict)
    requests: list[httpx.Request] = field(default_factory=list)
    _buckets: dict[bool, Bucket] = field(default_factory=dict)
    _secondary: list[tuple[float | None, str]] = field(default_factory=list)
    _raw_blocked_until: float = 0.0
    _html_pages: dict[str, int] = field(default_factory=dict)

    # -- state ---------------------------------------------------------------------------
    def push(
        self,
        repo: str,
        files: Mapping[str, Entry | None],
        *,
        branch: str = "main",
        message: str = "",
        sha: str | None = None,
        start: str | None = None,
    ) -> str:
        """A new commit on ``branch``: the parent's tree with ``files`` set (None deletes).
        ``sha`` gives the commit a known SHA (one a bundled manifest pins); a new branch
        starts at ``start`` (a branch) when given."""
        # A repository's first branch is its default branch, as on GitHub.
        state = self.repos.setdefault(repo, Repo(default_branch=branch, network=repo))
        parent = state.refs.get(branch) or (state.refs.get(start) if start else None)
        tree = dict(state.commits[parent].tree) if parent else {}
        for path, body in files.items():
            if body is None:
                tree.pop(path, None)
            else:
                tree[path] = body
        blobs = sorted((p, hashlib.sha256(_seed_bytes(b)).hexdigest()) for p, b in tree.items())
        seed = json.dumps([repo, parent, blobs, message, len(state.commits)])
        sha = sha or hashlib.sha1(seed.encode()).hexdigest()
        state.commits[sha] = Commit(sha, tree, parent, message)
        state.refs[branch] = sha
        return sha

    def fork(self, parent: str, name: str) -> None:
        """``name`` forks ``parent``: the same refs now, and one object store between them."""
        source = self.repos[parent]
        self.repos[name] = Repo(
            commits=source.commits, refs=dict(source.refs), network=source.network or parent
        )

    def tag(self, repo: str, name: str, sha: str) -> None:
        self.repos[repo].refs[name] = sha

    def rewrite(self, repo: str, commit: str, path: str, body: bytes) -> None:
        """Serve other bytes for ``path`` at an existing commit (a host that lies, a mirror
        out of sync): what upstream verification exists to catch."""
        self.repos[repo].commits[commit].tree[path] = body

    def exhaust(self, *, reset_in: float, authenticated: bool = False) -> None:
        bucket = self._bucket(authenticated)
        bucket.remaining = 0
        bucket.reset = int(self.clock() + reset_in)

    def secondary_limit(self, retry_after: float | None, times: int = 1, where: str = "") -> None:
        """The next ``times`` API requests (whose path contains ``where``) are limited."""
        self._secondary.extend([(retry_after, where)] * times)

    def block_raw(self, seconds: float) -> None:
        """The raw host answers a bare 429 for the next ``seconds`` of the fake's clock."""
        self._raw_blocked_until = self.clock() + seconds

    def html_page(self, path: str, times: int = 1) -> None:
        """The raw host answers the next ``times`` requests for ``path`` (at any repository
        and ref) with 200 and an HTML error page."""
        self._html_pages[path] = times

    def remaining(self, authenticated: bool = False) -> int:
        return self._bucket(authenticated).remaining

    @property
    def raw_requests(self) -> list[httpx.Request]:
        host = urlsplit(self.raw_base).netloc
        return [r for r in self.requests if r.url.host == host.split(":")[0]]

    @property
    def api_requests(self) -> list[httpx.Request]:
        host = urlsplit(self.api_base).netloc
        return [r for r in self.requests if r.url.host == host.split(":")[0]]

    # -- serving -------------------------------------------------------------------------
    def mount(self, router: respx.MockRouter) -> None:
        router.route(host=urlsplit(self.raw_base).hostname).mock(side_effect=self._raw)
        router.route(host=urlsplit(self.api_base).hostname).mock(side_effect=self._api)

    def _bucket(self, authenticated: bool) -> Bucket:
        now = self.clock()
        bucket = self._buckets.get(authenticated)
        if bucket is None or now >= bucket.reset:
            limit = self.token_limit if authenticated else self.anonymous_limit
            bucket = Bucket(limit, limit, int(now + WINDOW))
            self._buckets[authenticated] = bucket
        return bucket

    def _caller(self, request: httpx.Request) -> bool | None:
        """True with the valid token, False anonymous, None with a wrong token."""
        header = request.headers.get("authorization")
        if header is None:
            return False
        scheme, _, value = header.partition(" ")
        if scheme.lower() in ("bearer", "token") and self.token and value == self.token:
            return True
        return None

    def _spend(self, authenticated: bool) -> tuple[bool, dict[str, str]]:
        bucket = self._bucket(authenticated)
        allowed = bucket.remaining > 0
        if allowed:
            bucket.remaining -= 1
        headers = {
            "x-ratelimit-limit": str(bucket.limit),
            "x-ratelimit-remaining": str(bucket.remaining),
            "x-ratelimit-used": str(bucket.limit - bucket.remaining),
            "x-ratelimit-reset": str(bucket.reset),
            "x-ratelimit-resource": "core",
        }
        return allowed, headers

    def _resolve(self, repo: str, ref: str) -> Commit | None:
        state = self.repos.get(repo)
        if state is None:
            return None
        sha = state.refs.get(ref, ref)
        return state.commits.get(sha)

    def _raw(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        caller = self._caller(request)
        text = {"content-type": "text/plain; charset=utf-8"}
        if caller is None:
            return httpx.Response(404, headers=text, content=b"404: Not Found")
        if self.clock() < self._raw_blocked_until:
            return httpx.Response(429, headers=text, content=b"429: Too Many Requests")
        allowed, limits = self._spend(caller)
        if not allowed:
            return httpx.Response(
                429, headers={**text, **limits}, content=b"429: Too Many Requests"
            )
        parts = unquote(request.url.path).lstrip("/").split("/", 3)
        if len(parts) < 4:
            return httpx.Response(400, headers=text, content=b"400: Invalid request")
        owner, name, ref, path = parts
        commit = self._resolve(f"{owner}/{name}", ref)
        entry = None if commit is None else commit.tree.get(path)
        body = None if entry is None else _git_bytes(entry)
        if body is None:  # no such commit or path, or a submodule: no file to serve
            return httpx.Response(404, headers=text, content=b"404: Not Found")
        if self._html_pages.get(path, 0) > 0:
            self._html_pages[path] -= 1
            return httpx.Response(
                200, headers={"content-type": "text/html; charset=utf-8"}, content=HTML_ERROR_PAGE
            )
        return httpx.Response(
            200,
            headers={
                **text,
                "etag": f'"{hashlib.sha256(body).hexdigest()}"',
                "cache-control": "max-age=300",
                "x-github-request-id": f"FAKE:{len(self.requests)}",
            },
            content=body,
        )

    def _api_error(
        self, status: int, message: str, headers: Mapping[str, str], docs: str = DOCS
    ) -> httpx.Response:
        body = {"message": message, "documentation_url": docs, "status": str(status)}
        return httpx.Response(status, headers=dict(headers), json=body)

    def _api(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        caller = self._caller(request)
        if caller is None:
            return self._api_error(401, "Bad credentials", {})
        limited = next(
            (i for i, (_, where) in enumerate(self._secondary) if where in request.url.path), None
        )
        if limited is not None:
            wait, _ = self._secondary.pop(limited)
            bucket = self._bucket(caller)
            return self._api_error(
                403,
                "You have exceeded a secondary rate limit. Please wait a few minutes before "
                "you try again.",
                {"retry-after": str(int(wait))}
                if wait is not None
                else {
                    "x-ratelimit-limit": str(bucket.limit),
                    "x-ratelimit-remaining": str(bucket.remaining),
                    "x-ratelimit-reset": str(bucket.reset),
                },
            )
        allowed, limits = self._spend(caller)
        if not allowed:
            who = "user ID 1" if caller else "203.0.113.7"
            return httpx.Response(
                403,
                headers=limits,
                json={
                    "message": f"API rate limit exceeded for {who}.",
                    "documentation_url": f"{DOCS}/overview/resources-in-the-rest-api#rate-limiting",
                },
            )
        parts = unquote(request.url.path).lstrip("/").split("/", 4)
        if len(parts) == 5 and parts[0] == "repos" and parts[3] == "git":
            return self._tree(f"{parts[1]}/{parts[2]}", parts[4], request, limits)
        if len(parts) == 3 and parts[0] == "repos":
            return self._repository(f"{parts[1]}/{parts[2]}", limits)
        if len(parts) == 5 and parts[0] == "repos" and parts[3] == "compare":
            return self._compare(f"{parts[1]}/{parts[2]}", parts[4], limits)
        if len(parts) != 5 or parts[0] != "repos" or parts[3] != "commits":
            return self._api_error(404, "Not Found", limits)
        _, owner, name, _, ref = parts
        repo = f"{owner}/{name}"
        if repo not in self.repos:
            return self._api_error(404, "Not Found", limits, f"{DOCS}/commits/commits#get-a-commit")
        commit = self._resolve(repo, ref)
        if commit is None:
            return self._api_error(
                422,
                f"No commit found for SHA: {ref}",
                limits,
                f"{DOCS}/commits/commits#get-a-commit",
            )
        if "application/vnd.github.sha" in request.headers.get("accept", ""):
            return httpx.Response(
                200,
                headers={**limits, "content-type": "application/vnd.github.sha; charset=utf-8"},
                content=commit.sha.encode(),
            )
        return httpx.Response(
            200,
            headers=limits,
            json={
                "sha": commit.sha,
                "node_id": f"C_{commit.sha[:20]}",
                "commit": {"message": commit.message, "tree": {"sha": commit.sha[::-1]}},
                "url": f"{self.api_base}/repos/{repo}/commits/{commit.sha}",
                "html_url": f"https://github.com/{repo}/commit/{commit.sha}",
                "parents": [{"sha": commit.parent}] if commit.parent else [],
            },
        )

    def _repository(self, repo: str, limits: Mapping[str, str]) -> httpx.Response:
        """``GET /repos/{owner}/{repo}``: the fields a client reads (repos#get-a-repository)."""
        state = self.repos.get(repo)
        if state is None:
            return self._api_error(404, "Not Found", limits, f"{DOCS}/repos/repos#get-a-repository")
        body: dict[str, object] = {
            "full_name": repo,
            "default_branch": state.default_branch,
            "fork": bool(state.network) and state.network != repo,
            "html_url": f"https://github.com/{repo}",
        }
        if body["fork"]:
            body["parent"] = {"full_name": state.network}
        return httpx.Response(200, headers=dict(limits), json=body)

    def _ancestors(self, commit: Commit, commits: Mapping[str, Commit]) -> list[str]:
        """``commit`` and its first-parent history, newest first."""
        chain = [commit.sha]
        while commits[chain[-1]].parent is not None:
            chain.append(str(commits[chain[-1]].parent))
        return chain

    def _compare(self, repo: str, spec: str, limits: Mapping[str, str]) -> httpx.Response:
        """``compare/{base}...{head}``: ``status`` of head against base, and the counts."""
        docs = f"{DOCS}/commits/commits#compare-two-commits"
        base_ref, sep, head_ref = spec.partition("...")
        state = self.repos.get(repo)
        base = self._resolve(repo, base_ref) if sep else None
        head = self._resolve(repo, head_ref) if sep else None
        if state is None or base is None or head is None:
            return self._api_error(404, "Not Found", limits, docs)
        base_line = self._ancestors(base, state.commits)
        head_line = self._ancestors(head, state.commits)
        merge_base = next((sha for sha in head_line if sha in base_line), None)
        if merge_base is None:
            message = f"No common ancestor between {base_ref} and {head_ref}."
            return self._api_error(404, message, limits, docs)
        ahead, behind = head_line.index(merge_base), base_line.index(merge_base)
        status = (
            "identical"
            if ahead == behind == 0
            else "behind"
            if ahead == 0
            else "ahead"
            if behind == 0
            else "diverged"
        )
        return httpx.Response(
            200,
            headers=dict(limits),
            json={
                "url": f"{self.api_base}/repos/{repo}/compare/{spec}",
                "html_url": f"https://github.com/{repo}/compare/{spec}",
                "base_commit": {"sha": base.sha},
                "merge_base_commit": {"sha": merge_base},
                "status": status,
                "ahead_by": ahead,
                "behind_by": behind,
                "total_commits": ahead,
                "commits": [{"sha": sha} for sha in reversed(head_line[:ahead])],
                "files": [],
            },
        )

    def _tree(
        self, repo: str, rest: str, request: httpx.Request, limits: Mapping[str, str]
    ) -> httpx.Response:
        """``git/trees/{ref}``: the commit's tree, recursive when asked."""
        docs = f"{DOCS}/git/trees#get-a-tree"
        kind, _, ref = rest.partition("/")
        if kind != "trees" or not ref:
            return self._api_error(404, "Not Found", limits)
        if repo not in self.repos:
            return self._api_error(404, "Not Found", limits, docs)
        commit = self._resolve(repo, ref)
        if commit is None:
            return self._api_error(404, "Not Found", limits, docs)
        recursive = request.url.params.get("recursive") not in (None, "", "0", "false")
        folders = sorted(
            {"/".join(p.split("/")[:i]) for p in commit.tree for i in range(1, p.count("/") + 1)}
        )
        entries: list[dict[str, object]] = [
            {
                "path": folder,
                "mode": "040000",
                "type": "tree",
                "sha": hashlib.sha1(f"{commit.sha}:{folder}".encode()).hexdigest(),
                "url": f"{self.api_base}/repos/{repo}/git/trees/{folder}",
            }
            for folder in folders
        ]
        entries += [self._tree_entry(repo, path, value) for path, value in commit.tree.items()]
        entries.sort(key=lambda e: str(e["path"]))
        if not recursive:
            entries = [e for e in entries if "/" not in str(e["path"])]
        truncated = self.tree_limit is not None and len(entries) > self.tree_limit
        if truncated:
            entries = entries[: self.tree_limit]
        return httpx.Response(
            200,
            headers=dict(limits),
            json={
                "sha": hashlib.sha1(f"tree:{commit.sha}".encode()).hexdigest(),
                "url": f"{self.api_base}/repos/{repo}/git/trees/{commit.sha}",
                "tree": entries,
                "truncated": truncated,
            },
        )

    def _tree_entry(self, repo: str, path: str, value: Entry) -> dict[str, object]:
        """One entry as the git trees API lists it; a submodule has no ``size`` or ``url``."""
        if isinstance(value, Submodule):
            return {"path": path, "mode": "160000", "type": "commit", "sha": value.commit}
        body = _git_bytes(value) or b""
        mode = (
            "120000"
            if isinstance(value, Symlink)
            else "100755"
            if isinstance(value, Executable)
            else "100644"
        )
        sha = blob_sha1(body)
        return {
            "path": path,
            "mode": mode,
            "type": "blob",
            "sha": sha,
            "size": len(body),
            "url": f"{self.api_base}/repos/{repo}/git/blobs/{sha}",
        }


@contextmanager
def serve(fake: FakeGitHub) -> Iterator[FakeGitHub]:
    """Route every request to the fake's hosts to it; any other request fails."""
    with respx.mock(assert_all_called=False) as router:
        fake.mount(router)
        yield fake


@contextmanager
def no_network() -> Iterator[respx.MockRouter]:
    """Any HTTP request at all fails: for what must be answered without one."""
    with respx.mock(assert_all_called=False) as router:
        router.route().mock(side_effect=AssertionError("no HTTP request was expected"))
        yield router


def manifest_toml(
    repo: str,
    commit: str,
    files: Mapping[str, str | Mapping[str, object]],
    *,
    entry: str = "",
    name: str = "atlas",
) -> str:
    """A manifest with one [[github]] entry; each file is a format or a table of fields."""
    lines = [
        "# A corpus of pinned files, for tests.",
        f'[corpus]\nname = "{name}"\nnamespace = "{name}"\n',
        f'[[github]]\nrepo = "{repo}"\ncommit = "{commit}"  # the pin\n{entry}',
    ]
    for path, spec in files.items():
        fields: dict[str, object] = {"kind": "doc", "lifecycle": "published"}
        fields.update({"format": spec} if isinstance(spec, str) else spec)
        lines.append(f'[[github.files]]\npath = "{path}"')
        lines.extend(f"{key} = {json.dumps(value)}" for key, value in fields.items())
        lines.append("")
    return "\n".join(lines)
