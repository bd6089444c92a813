"""What changed between two snapshots: JSON field paths, unified text diffs, word diffs."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.checks.diffing import (
    diff_snapshots,
    json_changes,
    render_words,
    text_diff,
    word_diff,
)
from warehouse.canonical import canonical_json


def paths(old: Any, new: Any) -> list[tuple[str, str]]:
    return [(c.path, c.change) for c in json_changes(old, new)]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ({"a": 1}, {"a": 1}, []),
        ({"a": 1}, {"a": 2}, [("a", "changed")]),
        ({"a": 1}, {"a": 1, "b": 2}, [("b", "added")]),
        ({"a": 1, "b": 2}, {"a": 1}, [("b", "removed")]),
        ({"user": {"name": "Ana"}}, {"user": {"name": "Ana B"}}, [("user.name", "changed")]),
        ({"results": [{"x": 1}]}, {"results": [{"x": 2}]}, [("results[0].x", "changed")]),
        ({"tags": ["a"]}, {"tags": ["a", "b"]}, [("tags[1]", "added")]),
        ({"tags": ["a", "b"]}, {"tags": ["a"]}, [("tags[1]", "removed")]),
        ({"odd key": 1}, {"odd key": 2}, [('["odd key"]', "changed")]),
        ({"a.b": {"c": 1}}, {"a.b": {"c": 2}}, [('["a.b"].c', "changed")]),
        ({"flag": 1}, {"flag": True}, [("flag", "changed")]),
        ({"n": 1}, {"n": 1.0}, [("n", "changed")]),
        ({"v": {"x": 1}}, {"v": [1]}, [("v", "changed")]),
        ([1, 2], [1, 3], [("[1]", "changed")]),
        ("a", "b", [("(whole record)", "changed")]),
    ],
)
def test_json_changes_name_each_changed_leaf(old: Any, new: Any, expected: list) -> None:
    assert paths(old, new) == expected


def test_json_changes_keep_values_short() -> None:
    [change] = json_changes({"s": "x" * 500}, {"s": "y"})
    assert change.old is not None and len(change.old) == 160 and change.old.endswith("…")
    assert change.new == '"y"'


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(json_values, json_values)
def test_no_change_exactly_when_canonical_bytes_agree(old: Any, new: Any) -> None:
    assert (json_changes(old, new) == []) == (canonical_json(old) == canonical_json(new))


def test_word_diff_marks_words_and_trims_long_context() -> None:
    prefix = " ".join(f"w{i}" for i in range(30))
    words = word_diff(f"{prefix} the highway today", f"{prefix} the interstate today")
    assert words[0] == ("=", "…w25 w26 w27 w28 w29 the ")  # six words of context
    assert words[1:] == [("-", "highway"), ("+", "interstate"), ("=", " today")]
    assert render_words(words).endswith("the [-highway-]{+interstate+} today")


def test_text_diff_is_unified_with_labels() -> None:
    lines = text_diff("a\nb\nc\n", "a\nB\nc\n", old_label="revision 1", new_label="revision 2")
    assert lines == ["--- revision 1", "+++ revision 2", "@@ -1,3 +1,3 @@", " a", "-b", "+B", " c"]


def test_media_type_chooses_the_comparison() -> None:
    record = diff_snapshots(b'{"a":1}', "application/json", b'{"a":2}', "application/json")
    assert record.kind == "json" and [f.path for f in record.fields] == ["a"]
    vendor = diff_snapshots(
        b'{"a":1}', "application/vnd.x+json", b'{"a":2}', "application/vnd.x+json"
    )
    assert vendor.kind == "json"
    text = diff_snapshots(b"one\n", "text/markdown; charset=utf-8", b"two\n", "text/markdown")
    assert text.kind == "text" and "+two" in text.lines
    pdf = diff_snapshots(b"%PDF-1.4 a", "application/pdf", b"%PDF-1.4 bb", "application/pdf")
    assert (pdf.kind, pdf.old_size, pdf.new_size) == ("binary", 10, 11)


def test_json_that_does_not_parse_falls_back_to_text_then_binary() -> None:
    broken = diff_snapshots(
        b"<html>oops</html>", "application/json", b'{"a":1}', "application/json"
    )
    assert broken.kind == "text"
    undecodable = diff_snapshots(b"\xff\xfe", "text/plain", b"ok", "text/plain")
    assert undecodable.kind == "binary"


def test_long_diffs_are_cut_and_say_how_much_was_left_out() -> None:
    old = "\n".join(f"line {i}" for i in range(100))
    new = "\n".join(f"LINE {i}" for i in range(100))
    diff = diff_snapshots(old.encode(), "text/plain", new.encode(), "text/plain", max_lines=10)
    assert len(diff.lines) == 10 and diff.omitted == 193
    many = diff_snapshots(
        canonical_json({str(i): i for i in range(60)}),
        "application/json",
        canonical_json({str(i): -i - 1 for i in range(60)}),
        "application/json",
    )
    assert len(many.fields) == 50 and many.omitted == 10
    assert many.as_json()["omitted"] == 10


def test_snapshots_over_the_byte_cap_are_compared_by_size() -> None:
    big = diff_snapshots(b"a" * 11, "text/plain", b"b" * 12, "text/plain", max_bytes=10)
    assert (big.kind, big.old_size, big.new_size, big.lines) == ("large", 11, 12, [])
    uncapped = diff_snapshots(b"a" * 11, "text/plain", b"b" * 12, "text/plain", max_bytes=None)
    assert uncapped.kind == "text"


def test_only_strings_of_a_readable_length_get_a_word_diff() -> None:
    (short,) = json_changes({"s": "a b"}, {"s": "a c"})
    assert short.words is None
    (long,) = json_changes({"s": "word " * 20}, {"s": "word " * 19 + "other"})
    assert long.words is not None and ("+", "other") in long.words
    (huge,) = json_changes({"s": "x " * 30_000}, {"s": "y " * 30_000})
    assert huge.words is None


RECALL_OLD = "Recall 22V999: Remedy not yet available. Owners will be told."
RECALL_NEW = "Recall 22V999: Dealers will update the radar software. Owners will be told."


def test_a_run_of_changed_words_is_one_removal_and_one_addition() -> None:
    words = word_diff(RECALL_OLD, RECALL_NEW)
    assert render_words(words) == (
        "Recall 22V999: [-Remedy not yet available.-]{+Dealers will update the radar "
        "software.+} Owners will be told."
    )
    assert [op for op, _ in words] == ["=", "-", "+", "="]


def test_changes_apart_stay_apart() -> None:
    assert render_words(word_diff("a b c d e", "a x c y e")) == "a [-b-]{+x+} c [-d-]{+y+} e"
    assert render_words(word_diff("one two", "one two three")) == "one two{+ three+}"


@given(st.text(alphabet="ab \n", max_size=30), st.text(alphabet="ab \n", max_size=30))
def test_a_word_diff_never_splits_a_run_of_changes(old: str, new: str) -> None:
    words = word_diff(old, new)
    ops = [op for op, _ in words]
    assert all(a != b for a, b in itertools.pairwise(ops))
    assert all(text in old for op, text in words if op == "-")
    assert all(text in new for op, text in words if op == "+")


def test_grouped_word_diffs_in_markdown_and_html() -> None:
    from pipelines.reports.html import ENVIRONMENT
    from pipelines.reports.wording import field_phrase

    old = f'{{"remedy": "{RECALL_OLD}"}}'.encode()
    new = f'{{"remedy": "{RECALL_NEW}"}}'.encode()
    diff = diff_snapshots(old, "application/json", new, "application/json")
    (field,) = diff.fields
    md = field_phrase(field, lambda text: f"`{text}`")
    assert "[-Remedy not yet available.-]{+Dealers will update the radar software.+}" in md
    html = str(ENVIRONMENT.get_template("macros.html.j2").module.word_diff(field.words))  # type: ignore[attr-defined]
    assert (
        "<del>Remedy not yet available.</del><ins>Dealers will update the radar software.</ins>"
        in html
    )
