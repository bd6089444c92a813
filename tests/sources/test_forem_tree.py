"""Pure Forem helpers: tree walking to any depth, id_codes, volatile fields, comment states."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakes.forem import id_code_of
from sources.forem.tree import (
    VOLATILE_ARTICLE_FIELDS,
    VOLATILE_COMMENT_FIELDS,
    CommentNode,
    comment_body,
    comment_state,
    valid_id_code,
    walk,
    without_volatile,
)
from warehouse.canonical import canonical_json
from warehouse.errors import TreeError

USER = {
    "name": "Ana",
    "username": "ana",
    "user_id": 42,
    "profile_image": "a",
    "profile_image_90": "b",
}


def comment(code: str, text: str = "hi", children: list[Any] | None = None) -> dict[str, Any]:
    return {
        "type_of": "comment",
        "id_code": code,
        "created_at": "2026-05-01T10:00:00Z",
        "body_html": f"<p>{text}</p>",
        "user": dict(USER),
        "children": children or [],
    }


ARTICLE: dict[str, Any] = {
    "type_of": "article",
    "id": 7,
    "title": "T",
    "body_html": "<p>x</p>",
    "comments_count": 3,
    "public_reactions_count": 5,
    "positive_reactions_count": 5,
    "reading_time_minutes": 2,
    "social_image": "https://media.example/s.png",
    "last_comment_at": "2026-05-02T00:00:00Z",
    "readable_publish_date": "May 1",
    "user": dict(USER),
    "organization": {
        "name": "Org",
        "username": "org",
        "profile_image": "c",
        "profile_image_90": "d",
    },
}


def test_the_volatile_lists_are_exactly_these() -> None:
    assert VOLATILE_ARTICLE_FIELDS == (
        "comments_count",
        "public_reactions_count",
        "positive_reactions_count",
        "reading_time_minutes",
        "social_image",
        "last_comment_at",
        "readable_publish_date",
        "user.profile_image",
        "user.profile_image_90",
        "organization.profile_image",
        "organization.profile_image_90",
    )
    assert VOLATILE_COMMENT_FIELDS == (
        "public_reactions_count",
        "positive_reactions_count",
        "user.profile_image",
        "user.profile_image_90",
    )


def _set(record: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    changed = copy.deepcopy(record)
    *parents, leaf = path.split(".")
    target = changed
    for key in parents:
        target = target[key]
    target[leaf] = value
    return changed


@pytest.mark.parametrize("path", VOLATILE_ARTICLE_FIELDS)
def test_a_volatile_article_field_does_not_change_the_stored_bytes(path: str) -> None:
    before = canonical_json(without_volatile(ARTICLE, VOLATILE_ARTICLE_FIELDS))
    after = canonical_json(
        without_volatile(_set(ARTICLE, path, "churned"), VOLATILE_ARTICLE_FIELDS)
    )
    assert after == before
    assert b"churned" not in after


@pytest.mark.parametrize("path", ["title", "body_html", "user.username", "organization.name"])
def test_a_content_field_does_change_the_stored_bytes(path: str) -> None:
    before = canonical_json(without_volatile(ARTICLE, VOLATILE_ARTICLE_FIELDS))
    after = canonical_json(without_volatile(_set(ARTICLE, path, "edited"), VOLATILE_ARTICLE_FIELDS))
    assert after != before


@pytest.mark.parametrize("path", VOLATILE_COMMENT_FIELDS)
def test_a_volatile_comment_field_does_not_change_the_stored_bytes(path: str) -> None:
    node = next(walk([comment("2a4b9")]))
    churned = CommentNode(node.id_code, _set(node.record, path, "churned"), None, 0)
    assert canonical_json(comment_body(churned, 7)) == canonical_json(comment_body(node, 7))


def test_without_volatile_leaves_the_input_alone_and_ignores_absent_paths() -> None:
    original = copy.deepcopy(ARTICLE)
    stripped = without_volatile(ARTICLE, [*VOLATILE_ARTICLE_FIELDS, "no.such.path", "title.x"])
    assert original == ARTICLE
    assert stripped["user"] == {"name": "Ana", "username": "ana", "user_id": 42}
    assert stripped["title"] == "T"


def test_walk_visits_every_depth_parents_first_in_document_order() -> None:
    tree = [
        comment("a", children=[comment("b", children=[comment("c", children=[comment("d")])])]),
        comment("e", children=[comment("f"), comment("g")]),
    ]
    nodes = list(walk(tree))
    assert [(n.id_code, n.parent_id_code, n.depth) for n in nodes] == [
        ("a", None, 0),
        ("b", "a", 1),
        ("c", "b", 2),
        ("d", "c", 3),
        ("e", None, 0),
        ("f", "e", 1),
        ("g", "e", 1),
    ]
    assert all("children" not in n.record for n in nodes)


def test_walk_goes_deeper_than_the_recursion_limit() -> None:
    tree = [comment(id_code_of(0))]
    leaf = tree[0]
    for depth in range(1, 3000):
        child = comment(id_code_of(depth))
        leaf["children"] = [child]
        leaf = child
    nodes = list(walk(tree))
    assert len(nodes) == 3000
    assert nodes[-1].depth == 2999


@st.composite
def trees(draw: st.DrawFn, depth: int = 0) -> list[dict[str, Any]]:
    width = draw(st.integers(0, 3 if depth < 4 else 0))
    return [{"children": draw(trees(depth + 1))} for _ in range(width)]


@given(trees())
def test_walk_yields_each_comment_once_with_a_consistent_place(shape: list[Any]) -> None:
    counter = iter(range(10_000))

    def build(nodes: list[Any]) -> list[Any]:
        return [comment(id_code_of(next(counter)), children=build(n["children"])) for n in nodes]

    tree = build(shape)
    nodes = list(walk(tree))
    by_code = {n.id_code: n for n in nodes}
    assert len(by_code) == len(nodes) == next(counter)
    for node in nodes:
        if node.parent_id_code is None:
            assert node.depth == 0
        else:
            assert by_code[node.parent_id_code].depth == node.depth - 1


@pytest.mark.parametrize(
    ("tree", "message"),
    [
        ({"id_code": "a"}, "a comment tree is a JSON array"),
        (["a"], "a comment is a JSON object"),
        ([{"body_html": "x"}], "no valid id_code: None"),
        ([{"id_code": "../x"}], "no valid id_code: '../x'"),
        ([{"id_code": "a", "children": {"id_code": "b"}}], "children is not a JSON array"),
    ],
)
def test_walk_refuses_trees_of_another_shape(tree: object, message: str) -> None:
    with pytest.raises(TreeError, match=message.replace("(", r"\(").replace(".", r"\.")):
        list(walk(tree))


def test_id_codes_are_base_26_strings() -> None:
    assert valid_id_code("3jnm7") == "3jnm7"
    assert int(id_code_of(123456), 26) == 123456
    for bad in ("", "3JNM7", "a b", 12, None, "x" * 40):
        with pytest.raises(TreeError):
            valid_id_code(bad)


def test_comment_body_records_its_place_and_drops_children() -> None:
    node = list(walk([comment("a", children=[comment("b")])]))[1]
    body = comment_body(node, 7)
    assert body["article_id"] == 7
    assert body["parent_id_code"] == "a"
    assert body["depth"] == 1
    assert "children" not in body
    assert body["user"] == {"name": "Ana", "username": "ana", "user_id": 42}


def test_comment_body_refuses_an_upstream_field_that_contradicts_the_tree() -> None:
    node = next(walk([{**comment("a"), "depth": 3}]))
    with pytest.raises(TreeError, match="contradicts its place"):
        comment_body(node, 7)
    agreeing = next(walk([{**comment("a"), "depth": 0}]))
    assert comment_body(agreeing, 7)["depth"] == 0


@pytest.mark.parametrize(
    ("body_html", "user", "state"),
    [
        ("<p>Nice</p>", USER, "present"),
        ("<p>[deleted]</p>", {}, "deleted"),
        ("<p>[deleted]</p>\n", None, "deleted"),
        ("<p>[hidden by post author]</p>", {}, "hidden"),
        ("<p>[deleted]</p>", USER, "present"),  # someone wrote the placeholder text
        ("<p>gone</p>", {}, "present"),
    ],
)
def test_comment_state(body_html: str, user: object, state: str) -> None:
    assert comment_state({"body_html": body_html, "user": user}) == state
