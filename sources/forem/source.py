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

The author's profile inside every record (``user``), an article's ``organization`` and the
fields the API added (``subforem_id``, ``ai_disclosure_*``) are stored as served and declared
metadata (:data:`sources.forem.tree.METADATA_FIELDS`): a revision that changes only them is a
metadata change, listed apart by drift and not counted by ``--fail-on-drift``.

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

The entry and its instance are :mod:`sources.forem.entry`'s, the requests and pacing
:mod:`sources.forem.api`'s, the stored records :mod:`sources.forem.records`'s and curation
:mod:`sources.forem.curate`'s. This module fetches an entry's listings and names the source.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sources.base import FetchContext, Source
from sources.forem.api import Fetched, ForemApi, client_for
from sources.forem.curate import curate
from sources.forem.entry import INSTANCE, ForemEntry, Instance, article_url_parts
from sources.forem.records import article_record, comment_record, tree_is_complete, tree_nodes
from sources.forem.tree import METADATA_FIELDS
from warehouse.errors import NotFoundUpstream
from warehouse.records import Listing


def label(entry: ForemEntry) -> str:
    if entry.username is not None:
        return f"forem user {entry.username}"
    return f"forem article {entry.url if entry.url is not None else entry.id}"


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


SOURCE = Source(
    name="forem",
    entry_model=ForemEntry,
    label=label,
    fetch=fetch,
    curate=curate,
    endpoints=(INSTANCE,),
    metadata_fields=METADATA_FIELDS,
)

__all__ = ["INSTANCE", "SOURCE", "ForemEntry", "curate", "fetch"]
