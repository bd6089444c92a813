"""The Forem (dev.to) source: articles and their complete comment trees.

A ``[[forem]]`` entry names one article (``url = "https://dev.to/<user>/<slug>"`` or
``id = 123``) or a ``username`` whose published articles are all taken; ``comments``
(default true) adds each article's comment tree. ``base_url`` serves another Forem
instance; ``reads_per_second`` (default 3, the published limit for GET ``/api/*``) paces
every request of the run to that instance.

Documents: ``forem/article/<id>`` and ``forem/comment/<id_code>`` on dev.to; on another
instance the host declared by the manifest comes first in the key
(``forem/article/<host>/<id>``), because ids are only unique within one instance. Identity
follows the declared instance, not the URL fetched from, so a mirror or a test fake set in
``RECEIPTS_FOREM_URL`` yields the same doc_ids. Bodies are canonical JSON of the v1 API record
minus the volatile fields listed in :mod:`sources.forem.tree`; a comment's body drops
``children`` and records its article, parent and depth.

Listings and what they prove:

- each article is its own listing (``forem:article:<id>``, with ``<host>:`` after
  ``forem:`` on another instance), never complete;
- an article's comment tree, fetched whole in one request (no ``page``), is a complete
  listing for ``forem:article:<id>:comments`` — a comment that vanishes becomes a tombstone —
  but only when it holds at least the article's ``comments_count`` comments. A smaller tree
  is a lower bound: a warning, and nothing it misses is tombstoned or leaves the corpus;
- a user's article list is *not* complete: it is paged by offset over a list ordered by
  publication date (an article published while paging shifts the pages), an unknown or
  renamed username lists as an empty page rather than a 404, and the list is edge-cached.
  An article that drops out of it keeps its last revision (no tombstone); like anything no
  entry yields any more, it leaves the corpus after a run in which every entry succeeded.

``FOREM_API_KEY`` (optional) is sent as the ``api-key`` header, and only to the instance
configured in the environment (``RECEIPTS_FOREM_URL``, default ``https://dev.to``), never to
a host a manifest names; it is never logged, stored or recorded.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import orjson
from pydantic import Field, field_validator, model_validator

from sources.base import Curated, CurationInput, FetchContext, Source, StrictModel
from sources.forem.tree import (
    VOLATILE_ARTICLE_FIELDS,
    CommentNode,
    comment_body,
    comment_state,
    walk,
    without_volatile,
)
from sources.http import Endpoint, HttpClient, base_url_problem, host_of, parse_json
from warehouse.canonical import canonical_json
from warehouse.clock import now
from warehouse.errors import NotFoundUpstream, SourceError, TreeError
from warehouse.ids import doc_id
from warehouse.records import Listing, Provenance, Record

# The Forem instance: dev.to unless an entry's ``base_url`` (or article URL) names another.
INSTANCE = Endpoint("forem", "https://dev.to", "RECEIPTS_FOREM_URL")
ACCEPT_V1 = "application/vnd.forem.api-v1+json"
SOURCE_FORMAT = "forem-api-v1"
ENV_API_KEY = "FOREM_API_KEY"
# Below the published 3 GET/s per IP (fixed one-second windows), with room for jitter.
DEFAULT_READS_PER_SECOND = 2.5
USER_PAGE_SIZE = 100


def _http_origin(value: str, what: str) -> tuple[str, str]:
    """(origin, path) of an http(s) URL, or a ValueError naming ``what`` was expected."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"must be an http(s) URL of {what}, got {value!r}")
    problem = base_url_problem(f"{parts.scheme}://{parts.netloc}{parts.path}")
    if problem:
        raise ValueError(problem)
    return f"{parts.scheme}://{parts.netloc.lower()}", parts.path


def article_url_parts(url: str) -> tuple[str, str, str]:
    """``https://dev.to/<user>/<slug>`` → (origin, user, slug); query and fragment ignored."""
    origin, path = _http_origin(url, "an article like https://dev.to/<username>/<slug>")
    segments = [s for s in path.split("/") if s]
    if len(segments) != 2:
        raise ValueError(
            f"must be an article URL like https://dev.to/<username>/<slug>, got {url!r}"
        )
    return origin, segments[0], segments[1]


class ForemEntry(StrictModel):
    """One ``[[forem]]`` entry: exactly one of ``url``, ``id`` or ``username``."""

    url: str | None = None
    id: int | None = Field(default=None, gt=0, strict=True)
    username: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
    comments: bool = Field(default=True, strict=True)
    base_url: str | None = None
    reads_per_second: float = Field(default=DEFAULT_READS_PER_SECOND, gt=0, le=1000, strict=True)

    @field_validator("url")
    @classmethod
    def _article_url(cls, value: str | None) -> str | None:
        if value is not None:
            article_url_parts(value)
        return value

    @field_validator("base_url")
    @classmethod
    def _instance_url(cls, value: str | None) -> str | None:
        if value is not None:
            _http_origin(value, "a Forem instance like https://dev.to")
        return value

    @model_validator(mode="after")
    def _one_target(self) -> ForemEntry:
        given = [name for name in ("url", "id", "username") if getattr(self, name) is not None]
        if len(given) != 1:
            have = f"got {', '.join(given)}" if given else "got none"
            raise ValueError(f"give exactly one of url, id, username ({have})")
        if self.url and self.base_url and host_of(self.url) != host_of(self.base_url):
            raise ValueError(
                f"url host {host_of(self.url)!r} differs from base_url host "
                f"{host_of(self.base_url)!r}"
            )
        return self


def label(entry: ForemEntry) -> str:
    if entry.username is not None:
        return f"forem user {entry.username}"
    return f"forem article {entry.url if entry.url is not None else entry.id}"


DEFAULT_HOST = INSTANCE.default_host


@dataclass(frozen=True)
class Instance:
    """The Forem instance of an entry: the host its documents belong to (declared by the
    manifest) and the base URL they are fetched from (the environment may override it)."""

    host: str
    url: str

    @classmethod
    def of(cls, entry: ForemEntry) -> Instance:
        declared = entry.base_url or (article_url_parts(entry.url)[0] if entry.url else None)
        return cls(host=host_of(declared or INSTANCE.default_url), url=INSTANCE.base_url(declared))

    @property
    def _key(self) -> tuple[str, ...]:
        return () if self.host == DEFAULT_HOST else (self.host,)

    def doc_id(self, kind: str, key: str) -> str:
        return doc_id("forem", kind, *self._key, key)

    def scope(self, *parts: object) -> str:
        return ":".join(["forem", *self._key, *map(str, parts)])


def sibling_doc_id(of_doc_id: str, kind: str, key: str) -> str:
    """The doc_id of another document of the same instance as ``of_doc_id``."""
    instance = of_doc_id.split("/")[2:-1]
    return doc_id("forem", kind, *instance, key)


def client_for(ctx: FetchContext, url: str, reads_per_second: float) -> HttpClient:
    """The run's client for one base URL, shared by its entries so pacing spans them all."""
    headers = {"Accept": ACCEPT_V1}
    key = os.environ.get(ENV_API_KEY)
    if key and host_of(url) == host_of(INSTANCE.base_url()):
        headers["api-key"] = key
    interval = max(ctx.http.policy.min_interval, 1.0 / reads_per_second)
    policy = dataclasses.replace(ctx.http.policy, min_interval=interval)
    hosts = frozenset({host_of(url)})
    for client in ctx.http.clients:
        if (client.source, client.allowed_hosts, client.policy) == ("forem", hosts, policy) and (
            dict(client.headers) == headers
        ):
            return client
    return ctx.http.client("forem", [url], headers=headers, policy=policy)


@dataclass(frozen=True)
class Fetched:
    """A parsed JSON response and what provenance needs of it."""

    url: str
    value: Any
    provenance: Provenance


@dataclass(frozen=True)
class ForemApi:
    """The v1 read endpoints this source uses, over one paced client."""

    client: HttpClient
    instance: Instance

    def _get(self, what: str, path: str, params: dict[str, Any] | None = None) -> Fetched:
        url = f"{self.instance.url}{path}"
        response = self.client.get(url, params=params, ok=(200, 404))
        if response.status_code == 404:
            raise NotFoundUpstream(
                f"forem: {what}: {_error_text(response)} (HTTP 404 for {response.request.url})"
            )
        provenance = Provenance(
            url=str(response.request.url),
            source_format=SOURCE_FORMAT,
            fetched_at=now(),
            etag=response.headers.get("etag"),
            last_modified=response.headers.get("last-modified"),
        )
        return Fetched(str(response.request.url), parse_json(response), provenance)

    def article(self, ref: int | tuple[str, str]) -> Fetched:
        """``/api/articles/{id}`` or ``/api/articles/{username}/{slug}``."""
        if isinstance(ref, int):
            what, path = f"article {ref}", f"/api/articles/{ref}"
        else:
            what = f"article /{ref[0]}/{ref[1]}"
            path = "/api/articles/" + "/".join(quote(part, safe="") for part in ref)
        fetched = self._get(what, path)
        if not isinstance(fetched.value, dict) or not isinstance(fetched.value.get("id"), int):
            raise SourceError(f"forem: {fetched.url} is not an article record (no integer id)")
        return fetched

    def user_article_ids(self, username: str, page_size: int = USER_PAGE_SIZE) -> list[int]:
        """Ids of a user's (or organization's) published articles, every page, in order.

        Paging stops at the first empty page: an instance may cap ``per_page`` below what
        was asked, so a short page does not mean the last one.
        """
        ids: list[int] = []
        seen: set[int] = set()
        page = 1
        while True:
            params = {"username": username, "page": page, "per_page": page_size}
            fetched = self._get(f"articles of {username}", "/api/articles", params)
            items = fetched.value
            if not isinstance(items, list):
                raise SourceError(f"forem: {fetched.url} is not a JSON array of articles")
            if not items:
                return ids
            page_ids = []
            for item in items:
                if not isinstance(item, dict) or not isinstance(item.get("id"), int):
                    raise SourceError(f"forem: {fetched.url} lists an article without an id")
                page_ids.append(item["id"])
            fresh = [i for i in page_ids if i not in seen]
            if not fresh:
                raise SourceError(
                    f"forem: page {page} of {username}'s articles repeats earlier pages; "
                    "the instance does not page this list"
                )
            seen.update(fresh)
            ids.extend(fresh)
            page += 1

    def comment_tree(self, article_id: int) -> Fetched:
        """The whole comment tree of an article in one response (no ``page`` parameter)."""
        return self._get(f"comments of article {article_id}", "/api/comments", {"a_id": article_id})


def _error_text(response: httpx.Response) -> str:
    """The ``error`` of a Forem error body (``{"error": "not found", "status": 404}``)."""
    try:
        body = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        return "not found"
    message = body.get("error") if isinstance(body, dict) else None
    return str(message) if message else "not found"


# -- records -------------------------------------------------------------------------------
def article_record(instance: Instance, fetched: Fetched) -> Record:
    article = fetched.value
    return Record(
        doc_id=instance.doc_id("article", str(article["id"])),
        kind="article",
        body=canonical_json(without_volatile(article, VOLATILE_ARTICLE_FIELDS)),
        provenance=fetched.provenance,
    )


def comment_record(
    instance: Instance, node: CommentNode, article_id: int, fetched: Fetched
) -> Record:
    return Record(
        doc_id=instance.doc_id("comment", node.id_code),
        kind="comment",
        body=canonical_json(comment_body(node, article_id)),
        provenance=fetched.provenance,
        attributes={"state": comment_state(node.record)},
    )


def tree_nodes(tree: Fetched, article_id: int, ctx: FetchContext) -> list[CommentNode]:
    """Every comment of a tree once; a repeated id_code is reported and its first kept."""
    nodes: dict[str, CommentNode] = {}
    try:
        for node in walk(tree.value):
            if node.id_code in nodes:
                ctx.warn(f"article {article_id}: comment {node.id_code} appears twice in the tree")
                continue
            nodes[node.id_code] = node
    except TreeError as exc:
        raise SourceError(f"forem: article {article_id}: {exc} ({tree.url})") from None
    return list(nodes.values())


def tree_is_complete(article: dict[str, Any], found: int, ctx: FetchContext) -> bool:
    """True when the tree holds at least ``comments_count`` comments; otherwise warn."""
    expected = article.get("comments_count")
    article_id = article["id"]
    if not isinstance(expected, int) or isinstance(expected, bool):
        ctx.warn(
            f"article {article_id}: no comments_count to check the tree against; its "
            f"{found} comments are recorded as a lower bound, not as complete"
        )
        return False
    if found < expected:
        ctx.warn(
            f"article {article_id}: the comment tree holds {found} comments but the article "
            f"reports comments_count {expected}; recorded as a lower bound, not as complete "
            "(no comment retired)"
        )
        return False
    return True


def article_listings(
    api: ForemApi, fetched: Fetched, with_comments: bool, ctx: FetchContext
) -> Iterator[Listing]:
    instance = api.instance
    article = fetched.value
    article_id: int = article["id"]
    yield Listing(
        scope=instance.scope("article", article_id),
        records=[article_record(instance, fetched)],
        label=f"article {article_id}",
    )
    if not with_comments:
        return
    tree = api.comment_tree(article_id)
    nodes = tree_nodes(tree, article_id, ctx)
    complete = tree_is_complete(article, len(nodes), ctx)
    yield Listing(
        scope=instance.scope("article", article_id, "comments"),
        records=[comment_record(instance, node, article_id, tree) for node in nodes],
        complete=complete,
        lower_bound=not complete,
        label=f"comments of article {article_id}",
    )


def fetch(entry: ForemEntry, ctx: FetchContext) -> Iterable[Listing]:
    instance = Instance.of(entry)
    api = ForemApi(client_for(ctx, instance.url, entry.reads_per_second), instance)
    if entry.username is None:
        if entry.id is not None:
            ref: int | tuple[str, str] = entry.id
        else:
            _, user, slug = article_url_parts(entry.url or "")
            ref = (user, slug)
        yield from article_listings(api, api.article(ref), entry.comments, ctx)
        return
    ids = api.user_article_ids(entry.username)
    if not ids:
        ctx.warn(
            f"user {entry.username}: no published articles listed (an unknown username "
            "also lists as empty)"
        )
    for article_id in ids:
        try:
            fetched = api.article(article_id)
        except NotFoundUpstream as exc:
            ctx.warn(f"user {entry.username}: listed article {article_id} skipped: {exc}")
            continue
        yield from article_listings(api, fetched, entry.comments, ctx)


# -- curation ------------------------------------------------------------------------------
def _reference(item: CurationInput, kind: str, key: str) -> dict[str, Any]:
    """A weak reference to another document of the item's instance: a comment's article or
    parent may be retired, or published in a later push, without breaking the comment."""
    target = item.sanity_id_of(sibling_doc_id(item.doc_id, kind, key))
    return {"_type": "reference", "_ref": target, "_weak": True}


def article_tags(article: dict[str, Any]) -> list[str]:
    """The tags of an article whichever field holds the list (show: ``tags``; index:
    ``tag_list``), else split from the comma-separated string."""
    for key in ("tags", "tag_list"):
        value = article.get(key)
        if isinstance(value, list):
            return [str(tag) for tag in value]
    text = article.get("tag_list") or article.get("tags") or ""
    return [tag.strip() for tag in str(text).split(",") if tag.strip()]


def _without_none(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def curate(item: CurationInput, entries: list[ForemEntry]) -> Curated:
    """An article or a comment as a curated document (``_ref``s to its article and parent)."""
    value = orjson.loads(item.body)
    user = value.get("user") or {}
    if item.kind == "article":
        return Curated(
            type="article",
            fields=_without_none(
                {
                    "articleId": value.get("id"),
                    "title": value.get("title"),
                    "description": value.get("description"),
                    "url": value.get("url"),
                    "canonicalUrl": value.get("canonical_url"),
                    "authorUsername": user.get("username"),
                    "publishedAt": value.get("published_at"),
                    "editedAt": value.get("edited_at"),
                    "tags": article_tags(value),
                    "bodyHtml": value.get("body_html"),
                    "bodyMarkdown": value.get("body_markdown"),
                }
            ),
        )
    if item.kind == "comment":
        parent = value.get("parent_id_code")
        return Curated(
            type="comment",
            fields=_without_none(
                {
                    "idCode": value.get("id_code"),
                    "article": _reference(item, "article", str(value["article_id"])),
                    "parent": None if parent is None else _reference(item, "comment", str(parent)),
                    "depth": value.get("depth"),
                    "authorUsername": user.get("username"),
                    "createdAt": value.get("created_at"),
                    "bodyHtml": value.get("body_html"),
                    "state": comment_state(value),
                }
            ),
        )
    raise SourceError(f"forem: no curation for documents of kind {item.kind!r} ({item.doc_id})")


SOURCE = Source(
    name="forem",
    entry_model=ForemEntry,
    label=label,
    fetch=fetch,
    curate=curate,
    endpoints=(INSTANCE,),
)
