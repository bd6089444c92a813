"""A stateful fake Forem instance (dev.to), served through respx.

It keeps users, articles and comment trees, and answers the v1 read endpoints with the
shapes of ``shared/reference/upstream-apis.md`` §3:

- ``GET /api/articles/{id}`` and ``GET /api/articles/{username}/{slug}``: the show record
  (``tag_list`` a string, ``tags`` an array) of a published article of this subforem, or
  ``{"error":"not found","status":404}``;
- ``GET /api/articles?username=&page=&per_page=``: the index records (``tag_list`` an array,
  ``tags`` a string, no bodies) of a user's published articles, newest first, paged; an
  unknown username lists as ``[]``; ``per_page`` is capped at ``max_per_page``;
- ``GET /api/comments?a_id=``: the whole comment tree; with ``page`` only that page of
  top-level comments (``per_page`` default 50), replies inline;
- deleted and hidden comments keep their place with the placeholder body and ``user: {}``;
- a GET rate limit as rack-attack enforces it: ``reads_per_second`` per IP in fixed
  one-second windows, answered with 429 and ``Retry-After``. A client sees neither where a
  window starts nor how much network jitter reorders its requests' arrival (up to
  ``NETWORK_JITTER``), so reads sent closer together than one second plus that jitter may
  land in one window, and the fake throttles them; forced 429s with
  :meth:`FakeForem.throttle`;
- requests without the v1 ``Accept`` header get the v0 ``Warning: 299`` header and are
  counted in ``v0_requests``;
- every article and comment carries its author's profile as it is now (the shared ``user``
  partial, forem/forem app/views/api/v1/shared/_user.json.jbuilder): a user editing their
  profile (:meth:`FakeForem.edit_profile`) changes every comment of theirs; and the API can
  add fields to comments (:attr:`FakeForem.comment_ai_disclosure`, the
  ``ai_disclosure_level``/``ai_disclosure_label`` pair articles carry, reference §3.4/§6).

Tests drive it like the real service: add articles and comments, edit, delete, hide,
destroy, let counters churn, make ``comments_count`` disagree with the tree.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
import orjson
import respx

from sources.forem.source import INSTANCE

ACCEPT_V1 = "application/vnd.forem.api-v1+json"
ID_CODE_DIGITS = "0123456789abcdefghijklmnop"
# Seconds by which network latency may bring two requests' arrivals closer than their sends.
NETWORK_JITTER = 0.1
V0_WARNING = '299 - "This endpoint is part of the V0 (beta) API"'


def id_code_of(number: int) -> str:
    """The base-26 id_code Forem derives from a numeric comment id."""
    digits = ""
    while True:
        number, rest = divmod(number, 26)
        digits = ID_CODE_DIGITS[rest] + digits
        if number == 0:
            return digits


@dataclass
class FakeUser:
    username: str
    name: str
    user_id: int
    image_version: int = 1
    website_url: str | None = None
    twitter_username: str | None = None

    def as_json(self) -> dict[str, Any]:
        image = f"https://media.example/u/{self.user_id}/v{self.image_version}"
        return {
            "name": self.name,
            "username": self.username,
            "twitter_username": self.twitter_username,
            "github_username": self.username,
            "user_id": self.user_id,
            "website_url": self.website_url,
            "profile_image": f"{image}/640.png",
            "profile_image_90": f"{image}/90.png",
        }


@dataclass
class FakeArticle:
    id: int
    username: str
    slug: str
    title: str
    body_markdown: str
    published_at: str
    tags: list[str]
    published: bool = True
    subforem_id: int = 1
    reactions: int = 0
    reading_time: int = 1
    social_version: int = 1
    readable_date: str = "May 1"
    last_comment_at: str | None = None
    count_lag: int = 0  # comments_count exceeds the tree by this many


@dataclass
class FakeComment:
    number: int
    article_id: int
    parent: int | None
    username: str
    text: str
    created_at: str
    state: str = "present"  # present | deleted | hidden

    @property
    def id_code(self) -> str:
        return id_code_of(self.number)


@dataclass
class FakeForem:
    base: str = INSTANCE.default_url
    max_per_page: int = 1000
    subforem_id: int = 1
    ignores_page: bool = False  # an instance (or proxy) that serves page 1 for every page
    comment_ai_disclosure: bool = False  # comments carry ai_disclosure_level / _label
    reads_per_second: float | None = 3.0
    clock: Callable[[], float] = time.monotonic
    users: dict[str, FakeUser] = field(default_factory=dict)
    articles: dict[int, FakeArticle] = field(default_factory=dict)
    comments: dict[int, FakeComment] = field(default_factory=dict)
    throttled: int = 0
    v0_requests: int = 0
    api_keys_seen: list[str | None] = field(default_factory=list)
    requests: list[httpx.Request] = field(default_factory=list)
    router: respx.Router | None = None
    _forced_429: list[str] = field(default_factory=list)
    _read_times: list[float] = field(default_factory=list)
    _next_article: int = 1000
    _next_comment: int = 26**3  # first id_code "1000"

    # -- state ------------------------------------------------------------------------
    def add_user(self, username: str, name: str | None = None) -> FakeUser:
        user = FakeUser(username, name or username.title(), 100 + len(self.users))
        self.users[username] = user
        return user

    def add_article(
        self,
        username: str,
        slug: str,
        title: str = "A title",
        body: str = "Some **markdown**.",
        *,
        published_at: str = "2026-05-01T10:00:00Z",
        tags: list[str] | None = None,
    ) -> int:
        if username not in self.users:
            self.add_user(username)
        self._next_article += 1
        article = FakeArticle(
            self._next_article, username, slug, title, body, published_at, tags or ["testing"]
        )
        self.articles[article.id] = article
        return article.id

    def add_comment(
        self,
        article_id: int,
        text: str,
        username: str = "ana",
        parent: str | None = None,
        created_at: str = "2026-05-02T10:00:00Z",
    ) -> str:
        if username not in self.users:
            self.add_user(username)
        self._next_comment += 7
        parent_number = None if parent is None else self.comment(parent).number
        comment = FakeComment(
            self._next_comment, article_id, parent_number, username, text, created_at
        )
        self.comments[comment.number] = comment
        self.articles[article_id].last_comment_at = created_at
        return comment.id_code

    def comment(self, id_code: str) -> FakeComment:
        return self.comments[int(id_code, 26)]

    def edit_comment(self, id_code: str, text: str) -> None:
        self.comment(id_code).text = text

    def delete_comment(self, id_code: str) -> None:
        self.comment(id_code).state = "deleted"

    def hide_comment(self, id_code: str) -> None:
        self.comment(id_code).state = "hidden"

    def destroy_comment(self, id_code: str) -> None:
        """Remove a comment without replies from the tree (and from ``comments_count``)."""
        number = self.comment(id_code).number
        if any(c.parent == number for c in self.comments.values()):
            raise ValueError("a comment with replies is marked deleted, not destroyed")
        del self.comments[number]

    def churn(self) -> None:
        """What changes on dev.to without anyone editing anything."""
        for article in self.articles.values():
            article.reactions += 3
            article.reading_time += 1
            article.social_version += 1
            article.readable_date = "May 1 '26"
            article.last_comment_at = "2026-06-30T23:59:59Z"
        for user in self.users.values():
            user.image_version += 1

    def edit_profile(
        self,
        username: str,
        *,
        name: str | None = None,
        website_url: str | None = None,
        twitter_username: str | None = None,
        picture: bool = False,
    ) -> None:
        """What a user's profile settings change: the ``user`` object of every article and
        comment of theirs (a new picture is a new image URL)."""
        user = self.users[username]
        user.name = name if name is not None else user.name
        user.website_url = website_url if website_url is not None else user.website_url
        if twitter_username is not None:
            user.twitter_username = twitter_username
        if picture:
            user.image_version += 1

    def throttle(self, times: int, retry_after: str = "2") -> None:
        """Answer the next ``times`` requests with 429 and this ``Retry-After``."""
        self._forced_429.extend([retry_after] * times)

    # -- JSON shapes ------------------------------------------------------------------
    def _tree_size(self, article_id: int) -> int:
        return sum(1 for c in self.comments.values() if c.article_id == article_id)

    def _article_json(self, article: FakeArticle, *, show: bool) -> dict[str, Any]:
        url = f"{self.base}/{article.username}/{article.slug}"
        record: dict[str, Any] = {
            "type_of": "article",
            "id": article.id,
            "title": article.title,
            "description": article.body_markdown[:40],
            "readable_publish_date": article.readable_date,
            "slug": article.slug,
            "path": f"/{article.username}/{article.slug}",
            "url": url,
            "comments_count": self._tree_size(article.id) + article.count_lag,
            "public_reactions_count": article.reactions,
            "positive_reactions_count": article.reactions,
            "collection_id": None,
            "published_timestamp": article.published_at,
            "language": "en",
            "subforem_id": article.subforem_id,
            "cover_image": None,
            "social_image": f"https://media.example/social/{article.id}-{article.social_version}",
            "canonical_url": url,
            "created_at": article.published_at,
            "edited_at": None,
            "crossposted_at": None,
            "published_at": article.published_at,
            "last_comment_at": article.last_comment_at or article.published_at,
            "reading_time_minutes": article.reading_time,
            "ai_disclosure_level": None,
            "ai_disclosure_label": None,
            "user": self.users[article.username].as_json(),
        }
        if show:
            record["tag_list"] = ", ".join(article.tags)
            record["tags"] = list(article.tags)
            record["body_html"] = f"<p>{article.body_markdown}</p>"
            record["body_markdown"] = article.body_markdown
        else:
            record["tag_list"] = list(article.tags)
            record["tags"] = ", ".join(article.tags)
        return record

    def _comment_json(self, comment: FakeComment) -> dict[str, Any]:
        if comment.state == "deleted":
            body, user = "<p>[deleted]</p>", {}
        elif comment.state == "hidden":
            body, user = "<p>[hidden by post author]</p>", {}
        else:
            body, user = f"<p>{comment.text}</p>", self.users[comment.username].as_json()
        children = [
            self._comment_json(c) for c in self.comments.values() if c.parent == comment.number
        ]
        record: dict[str, Any] = {
            "type_of": "comment",
            "id_code": comment.id_code,
            "created_at": comment.created_at,
            "body_html": body,
            "user": user,
            "children": children,
        }
        if self.comment_ai_disclosure:
            record |= {"ai_disclosure_level": None, "ai_disclosure_label": None}
        return record

    # -- HTTP -------------------------------------------------------------------------
    def install(self, router: respx.Router) -> FakeForem:
        router.route(host=urlsplit(self.base).netloc).mock(side_effect=self.handle)
        self.router = router
        return self

    def beside(self, base: str) -> FakeForem:
        """Another instance, served by the same router on the same clock."""
        assert self.router is not None, "serve or install this fake first"
        return FakeForem(base=base, clock=self.clock).install(self.router)

    @contextmanager
    def serving(self) -> Iterator[FakeForem]:
        """Serve this fake (and refuse any other host) for the duration of the block."""
        with respx.mock(assert_all_mocked=True, assert_all_called=False) as router:
            yield self.install(router)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        self.api_keys_seen.append(request.headers.get("api-key"))
        if self._forced_429:
            return self._too_many(self._forced_429.pop(0))
        if self.reads_per_second is not None:
            at = self.clock()
            self._read_times.append(at)
            window = int(self.reads_per_second)
            recent = self._read_times[-(window + 1) :]
            if len(recent) > window and at - recent[0] < 1.0 + NETWORK_JITTER:
                return self._too_many("1")
        headers = {}
        if ACCEPT_V1 not in request.headers.get("accept", ""):
            self.v0_requests += 1
            headers["warning"] = V0_WARNING
        status, body = self._route(request)
        return httpx.Response(
            status,
            headers={**headers, "content-type": "application/json; charset=utf-8"},
            content=orjson.dumps(body),
        )

    @property
    def read_times(self) -> list[float]:
        """When each paced read arrived, on the fake's clock."""
        return list(self._read_times)

    def _too_many(self, retry_after: str) -> httpx.Response:
        self.throttled += 1
        return httpx.Response(
            429,
            headers={"retry-after": retry_after, "content-type": "text/plain"},
            content=b"Retry later\n",
        )

    def _route(self, request: httpx.Request) -> tuple[int, Any]:
        path = [unquote(p) for p in request.url.path.split("/") if p]
        params = request.url.params
        if request.method != "GET" or path[:1] != ["api"]:
            return _not_found()
        if path == ["api", "articles"]:
            return 200, self._user_articles(params)
        if len(path) == 3 and path[1] == "articles" and path[2].isdigit():
            found = self.articles.get(int(path[2]))
            return self._show(found)
        if len(path) == 4 and path[1] == "articles":
            found = next(
                (a for a in self.articles.values() if (a.username, a.slug) == (path[2], path[3])),
                None,
            )
            return self._show(found)
        if path == ["api", "comments"] and params.get("a_id", "").isdigit():
            return 200, self._tree(int(params["a_id"]), params)
        return _not_found()

    def _show(self, article: FakeArticle | None) -> tuple[int, Any]:
        # Show is scoped to the instance's subforem; the username index is not.
        if article is None or not article.published or article.subforem_id != self.subforem_id:
            return _not_found()
        return 200, self._article_json(article, show=True)

    def _user_articles(self, params: httpx.QueryParams) -> list[dict[str, Any]]:
        username = params.get("username")
        if username not in self.users:
            return []
        per_page = min(int(params.get("per_page", 30)), self.max_per_page)
        page = 1 if self.ignores_page else int(params.get("page", 1))
        mine = sorted(
            (a for a in self.articles.values() if a.username == username and a.published),
            key=lambda a: a.published_at,
            reverse=True,
        )
        chunk = mine[(page - 1) * per_page : page * per_page]
        return [self._article_json(a, show=False) for a in chunk]

    def _tree(self, article_id: int, params: httpx.QueryParams) -> list[dict[str, Any]]:
        top = [
            self._comment_json(c)
            for c in self.comments.values()
            if c.article_id == article_id and c.parent is None
        ]
        if "page" not in params:
            return top
        per_page = int(params.get("per_page", 50))
        page = int(params["page"])
        return top[(page - 1) * per_page : page * per_page]


def forem_entry(**fields: object) -> str:
    """A ``[[forem]]`` manifest entry with these fields."""
    lines = [f"{key} = {json.dumps(value)}" for key, value in fields.items()]
    return "[[forem]]\n" + "\n".join(lines) + "\n"


def _not_found() -> tuple[int, Any]:
    return 404, {"error": "not found", "status": 404}


class VirtualClock:
    """Time that advances only when something sleeps: the injected ``sleep`` of an
    :class:`~sources.http.HttpFactory` and the ``clock`` of the fake share it, so pacing and
    ``Retry-After`` are honoured without a test waiting."""

    def __init__(self) -> None:
        self.offset = 0.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return time.monotonic() + self.offset

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.offset += max(0.0, seconds)
