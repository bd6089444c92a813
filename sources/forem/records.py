"""Forem records: an article and the comments of its tree as stored records (canonical
JSON without the volatile fields), and whether a tree is the article's whole thread."""

from __future__ import annotations

from typing import Any

from sources.base import FetchContext
from sources.forem.api import Fetched
from sources.forem.entry import Instance
from sources.forem.tree import (
    VOLATILE_ARTICLE_FIELDS,
    CommentNode,
    comment_body,
    comment_state,
    walk,
    without_volatile,
)
from warehouse.errors import SourceError, TreeError
from warehouse.records import Record, json_body


def article_record(instance: Instance, fetched: Fetched) -> Record:
    article = fetched.value
    return Record(
        doc_id=instance.doc_id("article", str(article["id"])),
        kind="article",
        **json_body(without_volatile(article, VOLATILE_ARTICLE_FIELDS)),
        provenance=fetched.provenance,
    )


def comment_record(
    instance: Instance, node: CommentNode, article_id: int, fetched: Fetched
) -> Record:
    return Record(
        doc_id=instance.doc_id("comment", node.id_code),
        kind="comment",
        **json_body(comment_body(node, article_id)),
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
