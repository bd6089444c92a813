"""Whether a pinned commit belongs to the repository its entry names.

The repositories of a fork network share one object store, so GitHub serves a commit that
only a fork holds under the parent's URLs too: the raw host, the commits and trees APIs all
answer for it (upstream-apis reference, section 6). A pin is the repository's only when a
branch or tag of the repository contains it. The compare API answers that in one request,
``GET /repos/{owner}/{repo}/compare/{base}...{head}``, whose ``status`` is ``identical``,
``behind`` (head is an ancestor of base), ``ahead`` or ``diverged``
(https://docs.github.com/rest/commits/commits#compare-two-commits). The base is the entry's
``ref`` (a branch or tag), else the repository's ``default_branch``
(``GET /repos/{owner}/{repo}``, https://docs.github.com/rest/repos/repos#get-a-repository).

Each (API base, repository, base ref, commit) is asked once per run; an entry whose files
are all stored already asks nothing (a pin does not move). When the check cannot be made (a
rate limit, an API that answers something else) the run says so in a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from sources.base import FetchContext
from sources.github.api import API, GithubClients
from sources.github.entry import GithubEntry
from warehouse.errors import HttpError, IntegrityError, ParseError, SourceError

# FetchContext.options key under which the answers of a run are kept.
REACH_CACHE_OPTION = "github_reachability"
CONTAINED = ("identical", "behind")
STATUSES = ("identical", "behind", "ahead", "diverged")


@dataclass(frozen=True)
class Reach:
    """The compare API's verdict for a pin (``status``), or why there is none (``unknown``);
    ``missing`` when GitHub compares nothing (404: no such commit or ref in the repository,
    or no common history), with GitHub's ``message``."""

    base: str
    url: str
    status: str | None = None
    unknown: str | None = None
    missing: bool = False
    message: str = ""

    @property
    def reachable(self) -> bool:
        return self.status in CONTAINED


def _default_branch(clients: GithubClients, entry: GithubEntry, cache: dict[Any, Any]) -> str:
    client, api_base = clients.get(API, entry.api_url)
    key = ("default_branch", api_base, entry.repo)
    if key in cache:
        return str(cache[key])
    _, data = client.get_json(f"{api_base}/repos/{entry.repo}")
    branch = data.get("default_branch") if isinstance(data, dict) else None
    if not isinstance(branch, str) or not branch:
        raise ParseError(f"github: {api_base}/repos/{entry.repo}: no 'default_branch'")
    cache[key] = branch
    return branch


def compare(clients: GithubClients, entry: GithubEntry, cache: dict[Any, Any]) -> Reach:
    """Ask the compare API whether ``entry.commit`` is in its base ref's history."""
    client, api_base = clients.get(API, entry.api_url)
    base = entry.ref or ""
    url = f"{api_base}/repos/{entry.repo}"
    try:
        base = base or _default_branch(clients, entry, cache)
        url = f"{api_base}/repos/{entry.repo}/compare/{quote(base, safe='/')}...{entry.commit}"
        response, data = client.get_json(url, ok=(200, 404))
        if response.status_code == 404:
            message = data.get("message") if isinstance(data, dict) else None
            return Reach(base, url, missing=True, message=str(message or ""))
    except (HttpError, ParseError, IntegrityError) as exc:
        return Reach(base, url, unknown=str(exc))
    status = data.get("status") if isinstance(data, dict) else None
    if status not in STATUSES:
        return Reach(base, url, unknown=f"{url} answered no comparison status")
    return Reach(base, url, status=str(status))


def check_reachable(clients: GithubClients, entry: GithubEntry, ctx: FetchContext) -> None:
    """Fail the entry when its pin is not in the history of the repository's ref; warn when
    that cannot be known."""
    cache = ctx.options.setdefault(REACH_CACHE_OPTION, {})
    _, api_base = clients.get(API, entry.api_url)
    key = (api_base, entry.repo, entry.ref, entry.commit)
    if key not in cache:
        cache[key] = compare(clients, entry, cache)
    reach: Reach = cache[key]
    where = f"github {entry.repo}@{entry.commit}"
    which = f"ref {reach.base!r}" if entry.ref else f"default branch {reach.base!r}"
    if reach.reachable:
        return
    if reach.unknown is not None:
        ctx.warn(
            f"{where}: not checked that the commit belongs to {entry.repo} ({reach.unknown}); "
            "a commit only a fork holds is served under the parent's URLs too"
        )
        return
    if reach.missing:
        said = f": {reach.message}" if reach.message else ""
        raise SourceError(
            f"{where}: GitHub compares no commit {entry.commit} with the {which} of "
            f"{entry.repo} ({reach.url} answered 404{said}); nothing was stored"
        )
    raise SourceError(
        f"{where}: the commit is not in the history of {entry.repo}'s {which} (compare "
        f"status {reach.status!r}, {reach.url}): a commit only a fork holds is served under "
        f"the parent's URLs too, so nothing was stored. Pin a commit of {entry.repo} "
        "(`receipts pin MANIFEST --ref <branch or tag>`), or name the branch or tag that "
        'holds it with `ref = "..."` in the entry'
    )
