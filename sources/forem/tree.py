"""Pure helpers for Forem records: comment trees, id_codes, volatile fields, comment states.

Nothing here does I/O. The fetch in :mod:`sources.forem.source` hands these functions the parsed
JSON of the v1 API and stores what they return.

- A comment tree (``GET /api/comments?a_id=<id>`` without ``page``) is a list of top-level
  comments, each with a recursive ``children`` list. :func:`walk` visits every comment at any
  depth, without recursion, in document order, with its parent's id_code and its depth
  (top-level comments have depth 0).
- A comment's stored body is its record without ``children``, without volatile fields, and
  with ``article_id``, ``parent_id_code`` and ``depth`` added: where a comment sits in the
  tree is part of its identity.
- Volatile fields change without the text changing (counters, reading time, image URLs that
  the CDN rotates, a publish date rendered relative to the current year). They are excluded
  before hashing *and* storing, so an unchanged article or comment never gets a new revision.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from warehouse.errors import TreeError

# Dotted paths into an article record (``GET /api/articles/{id}``) that are never stored.
VOLATILE_ARTICLE_FIELDS: tuple[str, ...] = (
    "comments_count",  # comment counter
    "public_reactions_count",  # reaction counters (both carry the same value)
    "positive_reactions_count",
    "reading_time_minutes",  # reading time, recomputed on render
    "social_image",  # generated preview image URL
    "last_comment_at",  # moves with every new comment, like the counter
    "readable_publish_date",  # "May 1" this year, "May 1 '24" from next year on
    "user.profile_image",  # profile image URLs
    "user.profile_image_90",
    "organization.profile_image",
    "organization.profile_image_90",
)

# Dotted paths into a comment record that are never stored. ``children`` is not listed: it
# is the tree itself, which :func:`walk` takes apart.
VOLATILE_COMMENT_FIELDS: tuple[str, ...] = (
    "public_reactions_count",  # not in the documented shape; excluded should it appear
    "positive_reactions_count",
    "user.profile_image",
    "user.profile_image_90",
)

# Dotted paths of a stored article or comment that are metadata, not content: they change
# without the text being edited, and are stored as served (warehouse.changes classifies a
# revision that changes only these as a metadata change, which --fail-on-drift ignores).
# - ``user``: the author's profile as the v1 API renders it inside every article and
#   comment (name, username, twitter_username, github_username, user_id, website_url,
#   profile_image, profile_image_90; forem/forem app/views/api/v1/shared/_user.json.jbuilder):
#   a user editing their profile changes every comment of theirs. A deleted or hidden
#   comment's ``user: {}`` comes with the placeholder body, a content change.
# - ``organization``: the same for an article's organization (shared/_organization).
# - ``subforem_id``, ``ai_disclosure_level``, ``ai_disclosure_label``: fields the API added
#   to articles (articles/_article.json.jbuilder) and, newer, to comments; their appearance
#   is not an edit (reference section 6).
METADATA_FIELDS: tuple[str, ...] = ("user", "organization", "subforem_id", "ai_disclosure_*")

# Keys this tool adds to a comment's stored body.
TREE_KEYS: tuple[str, ...] = ("article_id", "parent_id_code", "depth")

# An id_code is the numeric comment id written in base 26 (Ruby ``to_s(26)``: digits then
# ``a``-``p``); any lowercase letter is accepted in case an instance encodes differently.
ID_CODE_RE = re.compile(r"^[0-9a-z]{1,32}\Z")

DELETED_BODY = "<p>[deleted]</p>"
HIDDEN_BODY = "<p>[hidden by post author]</p>"

CommentState = Literal["present", "deleted", "hidden"]


def without_volatile(record: Mapping[str, Any], paths: Iterable[str]) -> dict[str, Any]:
    """A copy of ``record`` without the fields at the dotted ``paths`` (absent ones ignored).

    Only the mappings on a path are copied; everything else is shared with ``record``.
    """
    out = dict(record)
    for path in paths:
        head, _, rest = path.partition(".")
        if head not in out:
            continue
        if not rest:
            del out[head]
        elif isinstance(out[head], Mapping):
            out[head] = without_volatile(out[head], [rest])
    return out


def valid_id_code(value: object) -> str:
    """The id_code of a comment, checked: a short lowercase base-26 string."""
    if not isinstance(value, str) or not ID_CODE_RE.match(value):
        raise TreeError(f"comment has no valid id_code: {value!r}")
    return value


@dataclass(frozen=True)
class CommentNode:
    """One comment of a tree: its record without ``children``, and where it sits."""

    id_code: str
    record: dict[str, Any]
    parent_id_code: str | None
    depth: int


def walk(tree: object) -> Iterator[CommentNode]:
    """Every comment of a tree, to any depth, parents before their children, in order."""
    if not isinstance(tree, list):
        raise TreeError(f"a comment tree is a JSON array, got {type(tree).__name__}")
    stack: list[tuple[Any, str | None, int]] = [(c, None, 0) for c in reversed(tree)]
    while stack:
        comment, parent, depth = stack.pop()
        if not isinstance(comment, Mapping):
            raise TreeError(f"a comment is a JSON object, got {type(comment).__name__}")
        id_code = valid_id_code(comment.get("id_code"))
        children = comment.get("children") or []
        if not isinstance(children, list):
            raise TreeError(f"comment {id_code}: children is not a JSON array")
        record = {k: v for k, v in comment.items() if k != "children"}
        yield CommentNode(id_code, record, parent, depth)
        stack.extend((child, id_code, depth + 1) for child in reversed(children))


def comment_body(node: CommentNode, article_id: int) -> dict[str, Any]:
    """The stored body of a comment: its record minus volatile fields, plus its place."""
    body = without_volatile(node.record, VOLATILE_COMMENT_FIELDS)
    place = {"article_id": article_id, "parent_id_code": node.parent_id_code, "depth": node.depth}
    for key, value in place.items():
        if key in body and body[key] != value:
            raise TreeError(
                f"comment {node.id_code}: upstream field {key!r} = {body[key]!r} contradicts "
                f"its place in the tree ({value!r})"
            )
    body.update(place)
    return body


def comment_state(record: Mapping[str, Any]) -> CommentState:
    """``deleted`` or ``hidden`` when Forem shows the placeholder text with no author;
    ``present`` otherwise (a real comment whose text happens to be the placeholder keeps
    its author)."""
    user = record.get("user")
    if user:
        return "present"
    body = str(record.get("body_html") or "").strip()
    if body == DELETED_BODY:
        return "deleted"
    if body == HIDDEN_BODY:
        return "hidden"
    return "present"
