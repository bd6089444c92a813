from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warehouse.errors import IdentityError
from warehouse.ids import (
    CURATED_ID_MAX,
    SANITY_ID_MAX,
    doc_id,
    in_namespace,
    is_valid_sanity_id,
    namespace_problem,
    sanity_id,
)

namespaces = st.from_regex(r"\A[A-Za-z0-9_][A-Za-z0-9_-]{0,20}\Z").filter(
    lambda n: namespace_problem(n) is None
)
kinds = st.from_regex(r"\A[a-z][A-Za-z0-9]{0,15}\Z")
keys = st.text(min_size=1, max_size=300)


def test_doc_ids_are_paths_of_their_upstream_identity() -> None:
    assert doc_id("nhtsa", "complaint", "11561420") == "nhtsa/complaint/11561420"
    assert (
        doc_id("github", "Hyphae-Research-Foundation", "hyphae", "docs/gates/native-gate-status.md")
        == "github/Hyphae-Research-Foundation/hyphae/docs/gates/native-gate-status.md"
    )


@pytest.mark.parametrize("bad", ["", " x", "a b", "/abs", "trailing/", "a//b", "11561420\n"])
def test_doc_id_refuses_malformed_parts(bad: str) -> None:
    with pytest.raises(IdentityError):
        doc_id("forem", "comment", bad)


def test_clean_keys_are_kept_verbatim() -> None:
    assert sanity_id("hyphaeAtlas", "comment", "3ee98") == "hyphaeAtlas.comment.3ee98"


def test_unsafe_keys_get_a_readable_prefix_and_a_hash_suffix() -> None:
    made = sanity_id("hyphaeAtlas", "sourceDocument", "docs/gates/native-gate-status.md")
    assert made.startswith("hyphaeAtlas.sourceDocument.docs-gates-native-gate-status-md-")
    assert is_valid_sanity_id(made)


@pytest.mark.parametrize(
    ("namespace", "ok"),
    [
        ("hyphaeAtlas", True),
        ("cr-v_aeb", True),
        ("a.b", True),
        ("", False),
        ("-x", False),
        ("a..b", False),
        ("drafts", False),
        ("versions.x", False),
        ("_system", False),
        ("a b", False),
        ("x" * 65, False),
        ("hyphaeAtlas\n", False),
    ],
)
def test_namespace_rules(namespace: str, ok: bool) -> None:
    assert (namespace_problem(namespace) is None) is ok


@given(namespaces, kinds, keys)
def test_sanity_ids_are_always_valid(namespace: str, kind: str, key: str) -> None:
    made = sanity_id(namespace, kind, key)
    assert is_valid_sanity_id(made)
    assert len(made) <= CURATED_ID_MAX
    # an editor's draft and a Studio release's version of it are valid ids too
    assert is_valid_sanity_id(f"drafts.{made}")
    assert is_valid_sanity_id(f"versions.r12345678.{made}")
    assert len(f"versions.r12345678.{made}") <= SANITY_ID_MAX
    assert ".." not in made
    assert in_namespace(made, namespace)


@given(namespaces, kinds, keys, keys)
def test_distinct_keys_never_share_an_id(namespace: str, kind: str, a: str, b: str) -> None:
    if a != b:
        assert sanity_id(namespace, kind, a) != sanity_id(namespace, kind, b)


@given(namespaces, kinds, keys)
def test_sanity_ids_are_deterministic(namespace: str, kind: str, key: str) -> None:
    assert sanity_id(namespace, kind, key) == sanity_id(namespace, kind, key)


def test_a_clean_key_shaped_like_a_hashed_one_is_hashed_too() -> None:
    hashed = sanity_id("ns", "k", "a/b")
    key_part = hashed.split(".", 2)[2]
    assert sanity_id("ns", "k", key_part) != hashed


def test_in_namespace_is_exact_about_the_dot() -> None:
    assert in_namespace("ns.a", "ns")
    assert not in_namespace("nsX.a", "ns")
    assert not in_namespace("drafts.ns.a", "ns")
    assert not in_namespace("ns", "ns")


def test_a_line_end_is_no_part_of_a_clean_key_or_a_valid_id() -> None:
    # A pattern ending in ``$`` also matches before a final line end: the rules end in \Z.
    made = sanity_id("hyphaeAtlas", "comment", "3ee98\n")
    assert made != "hyphaeAtlas.comment.3ee98\n" and "\n" not in made
    assert made.startswith("hyphaeAtlas.comment.3ee98-")
    assert not is_valid_sanity_id("hyphaeAtlas.comment.3ee98\n")
    assert not in_namespace("hyphaeAtlas.comment.3ee98\n", "hyphaeAtlas")
