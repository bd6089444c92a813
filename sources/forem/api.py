"""Forem's v1 read API: the paced client of an instance, and the article, article-list and
comment-tree requests with their answers' checks.

Pacing is the rate limit: every request of a run to one instance shares one client, spaced
by the entry's ``reads_per_second``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import orjson

from sources.base import FetchContext
from sources.forem.entry import INSTANCE, Instance
from sources.http import HttpClient, host_of, parse_json
from warehouse import settings
from warehouse.clock import now
from warehouse.errors import NotFoundUpstream, SourceError
from warehouse.records import Provenance

ACCEPT_V1 = "application/vnd.forem.api-v1+json"
SOURCE_FORMAT = "forem-api-v1"
USER_PAGE_SIZE = 100


def client_for(ctx: FetchContext, url: str, reads_per_second: float) -> HttpClient:
    """The run's client for one base URL, shared by its entries so pacing spans them all."""
    headers = {"Accept": ACCEPT_V1}
    key = settings.secrets().forem_api_key
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
