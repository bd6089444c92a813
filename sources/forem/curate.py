"""Forem curation: a stored article or comment -> its curated fields (weak ``_ref``s to a
comment's article and parent)."""

from __future__ import annotations

from typing import Any

import orjson

from sources.base import Curated, CurationInput
from sources.forem.entry import ForemEntry, sibling_doc_id
from sources.forem.tree import comment_state
from warehouse.errors import SourceError


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
