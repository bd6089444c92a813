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


@dataclass
class Commit:
    sha: str
    tree: dict[str, bytes]
    parent: str | None
    message: str


@dataclass
class Repo:
    commits: dict[str, Commit] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)


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
    _secondary: list[float | None] = field(default_factory=list)
    _raw_blocked_until: float = 0.0
    _html_pages: dict[str, int] = field(default_factory=dict)

    # -- state ---------------------------------------------------------------------------
    def push(
        self,
        repo: str,
        files: Mapping[str, bytes | None],
        *,
        branch: str = "main",
        message: str = "",
        sha: str | None = None,
    ) -> str:
        """A new commit on ``branch``: the parent's tree with ``files`` set (None deletes).
        ``sha`` gives the commit a known SHA (one a bundled manifest pins)."""
        state = self.repos.setdefault(repo, Repo())
        parent = state.refs.get(branch)
        tree = dict(state.commits[parent].tree) if parent else {}
        for path, body in files.items():
            if body is None:
                tree.pop(path, None)
            else:
                tree[path] = body
        blobs = sorted((p, hashlib.sha256(b).hexdigest()) for p, b in tree.items())
        seed = json.dumps([repo, parent, blobs, message, len(state.commits)])
        sha = sha or hashlib.sha1(seed.encode()).hexdigest()
        state.commits[sha] = Commit(sha, tree, parent, message)
        state.refs[branch] = sha
        return sha

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

    def secondary_limit(self, retry_after: float | None, times: int = 1) -> None:
        self._secondary.extend([retry_after] * times)

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
        if commit is None or path not in commit.tree:
            return httpx.Response(404, headers=text, content=b"404: Not Found")
        if self._html_pages.get(path, 0) > 0:
            self._html_pages[path] -= 1
            return httpx.Response(
                200, headers={"content-type": "text/html; charset=utf-8"}, content=HTML_ERROR_PAGE
            )
        body = commit.tree[path]
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
        if self._secondary:
            wait = self._secondary.pop(0)
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
        entries = [
            {
                "path": folder,
                "mode": "040000",
                "type": "tree",
                "sha": hashlib.sha1(f"{commit.sha}:{folder}".encode()).hexdigest(),
                "url": f"{self.api_base}/repos/{repo}/git/trees/{folder}",
            }
            for folder in folders
        ]
        entries += [
            {
                "path": path,
                "mode": "100644",
                "type": "blob",
                "sha": blob_sha1(body),
                "size": len(body),
                "url": f"{self.api_base}/repos/{repo}/git/blobs/{blob_sha1(body)}",
            }
            for path, body in commit.tree.items()
        ]
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
