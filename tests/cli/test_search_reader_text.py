"""``receipts search`` reads what a reader sees, as ``verify-quote`` does: no hit in HTML
tags or JSON keys, whole words only, ranked by how often the phrase occurs, each hit shown
in context, filtered by source and corpus."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests import corpus_fixture as fixture
from tests.conftest import cli


@pytest.fixture
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    return fixture.shared(tmp_path_factory)


def hits(warehouse: str, text: str, *args: str) -> list[dict[str, Any]]:
    result = cli("search", text, "--warehouse", warehouse, "--json", *args)
    assert result.exit_code == 0, result.output
    return list(json.loads(result.stdout))


def found(warehouse: str, text: str, *args: str) -> list[str]:
    return [h["doc_id"] for h in hits(warehouse, text, *args)]


@pytest.mark.parametrize("markup", ["p>", "em>", "body_html", "odiNumber", "type_of", "user"])
def test_markup_and_json_keys_are_not_text(warehouse: str, markup: str) -> None:
    # Every comment's body holds <p>, every complaint the key "odiNumber".
    assert found(warehouse, markup) == []


@pytest.mark.parametrize("markup", ["<p>", "<em></em>"])
def test_a_phrase_of_markup_alone_is_a_usage_error(warehouse: str, markup: str) -> None:
    result = cli("search", markup, "--warehouse", warehouse)
    assert result.exit_code == 2 and "empty once markup is removed" in result.stderr


def test_html_is_searched_as_it_reads(warehouse: str) -> None:
    # <p>I&#39;d <em>never</em> buy this model again &mdash; the dealer said ...
    assert found(warehouse, "I'd never buy this model again — the dealer") == [
        "forem/comment/2a4b9"
    ]
    assert found(warehouse, "NO DEFECT FOUND") == [
        "forem/comment/2a4b9",
        "nhtsa/complaint/11561421",
    ]


def test_whole_words_only_as_verify_quote_sees_them(warehouse: str) -> None:
    assert found(warehouse, "stall") == []
    assert found(warehouse, "stalled") == ["nhtsa/complaint/11561421"]
    assert found(warehouse, "interstate at 65") == ["nhtsa/complaint/11561421"]


@pytest.mark.parametrize(
    "phrase", ["stalled", "stall", "dealer", "p>", "Returns policy", "Refunds are", "the car"]
)
def test_search_agrees_with_verify_quote(warehouse: str, phrase: str) -> None:
    listed = json.loads(cli("ls", "--warehouse", warehouse, "--json").stdout)
    live = [d["doc_id"] for d in listed if not d["tombstone"]]
    confirmed = [
        doc_id
        for doc_id in live
        if cli("verify-quote", doc_id, phrase, "--warehouse", warehouse).exit_code == 0
    ]
    assert sorted(found(warehouse, phrase)) == confirmed


def test_hits_are_ranked_and_shown_in_context(warehouse: str) -> None:
    # "the" occurs four times in the edited complaint (one "The"), once in the dealer comment.
    ranked = hits(warehouse, "the")
    counts = [h["hits"] for h in ranked]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]
    complaint = next(h for h in ranked if h["doc_id"] == "nhtsa/complaint/11561421")
    assert complaint["where"] == "field summary"
    assert complaint["hits"] == 4
    assert complaint["snippet"].startswith("While driving on the interstate")
    text = cli("search", "hatch opens", "--warehouse", warehouse).stdout
    assert text.splitlines()[0].split() == ["doc_id", "revision", "hits", "where", "snippet"]
    assert "Rear hatch opens by itself while parked." in text


def test_filters_by_source_and_corpus(warehouse: str) -> None:
    assert found(warehouse, "dealer", "--source", "forem") == ["forem/comment/2a4b9"]
    assert "forem/comment/2a4b9" not in found(warehouse, "dealer", "--source", "nhtsa")
    assert found(warehouse, "x", "--corpus", fixture.OTHER_CORPUS) == []
    assert found(warehouse, "Handbook", "--corpus", fixture.CORPUS) == [
        "github/acme/handbook/README.md"
    ]
    assert found(warehouse, "Handbook", "--corpus", fixture.OTHER_CORPUS) == []
