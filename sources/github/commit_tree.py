"""A commit's git tree, the record each fetched file is checked against.

The git trees API (one request per commit, only when a file is fetched) gives each path's
git blob SHA-1, and bytes whose blob SHA-1 differs (an HTML error page the raw host answered
with 200) are refused and not stored, so the next run asks for them again. A symlink's entry
(mode ``120000``) is a blob holding its target path, which the raw host serves: it is checked
the same way. Without the tree (a rate limit, no API access, a truncated tree that does not
list the path) the file is stored as served, with a warning, unless the raw host answered
``text/html`` (it serves files as ``text/plain``): that answer is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from sources.base import FetchContext
from sources.github.api import API, GithubClients, RawAnswer
from sources.github.entry import GithubEntry, GithubFile
from sources.http import HttpClient
from warehouse.canonical import git_blob_sha1
from warehouse.errors import FileRefused, HttpError, IntegrityError, ParseError


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
    if found.type != "blob":
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
    elif tree.entries[path].type != "blob":
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
    answer: RawAnswer,
) -> TreeEntry | None:
    """The commit's tree entry for the file (None when the tree cannot say). Refuse fetched
    bytes the tree says are not the file, and a ``text/html`` answer the tree cannot check;
    warn when other bytes cannot be checked (they are stored as served)."""
    tree = trees.get(entry.commit)
    body = answer.body
    problem = tree_problem(tree, file.path, entry.commit, url, body)
    if problem:
        raise FileRefused(problem)
    unchecked = tree_unchecked(tree, file.path, entry.commit)
    if unchecked and answer.is_html:
        raise FileRefused(
            f"{file.path}: {url} answered text/html ({len(body)} bytes) where the raw host "
            f"serves files as text/plain, and the commit's tree cannot check it ({unchecked}); "
            "nothing was stored, it is fetched again next run"
        )
    if tree.unavailable is not None:
        if entry.commit not in trees.warned:  # once per commit: the reason is the same
            trees.warned.add(entry.commit)
            ctx.warn(
                f"github {entry.repo}@{entry.commit}: files fetched in this run are stored as "
                f"served, not checked against the commit's tree ({tree.unavailable}); "
                "`receipts verify --upstream` re-downloads them later"
            )
        return None
    if unchecked:
        ctx.warn(
            f"{file.path}: stored as served by {url}, not checked against the commit's tree "
            f"({unchecked}); `receipts verify --upstream` re-downloads it later"
        )
    return tree.entries.get(file.path)
