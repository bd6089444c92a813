"""How the web view shows upstream text: escaped with hidden characters marked, a JSON record
as a tree (bounded), a document's title, and a unified diff side by side."""

from __future__ import annotations

from pipelines.checks.diffing import text_diff
from pipelines.serve import text as t


def test_marked_escapes_markup_and_marks_hidden_characters() -> None:
    shown = str(t.marked("<b>bold</b> \u202eevil \x1b[31m & tab\tkept"))
    assert "<b>" not in shown and "&lt;b&gt;bold&lt;/b&gt;" in shown
    assert "\u202e" not in shown and "\x1b" not in shown
    assert shown.count('<mark class="hidden-char"') == 2
    assert "\\u202e" in shown and "\\x1b" in shown and "&amp;" in shown and "\t" in shown


def test_a_json_tree_keeps_keys_and_values_as_text() -> None:
    tree = str(t.json_tree({"a<": ["<script>", 1, None, True], "b": {"c": "d"}}))
    assert "<script>" not in tree and "&lt;script&gt;" in tree
    assert '<span class="key">a&lt;</span>' in tree
    assert '<span class="v-null">null</span>' in tree and '<span class="v-bool">true</span>' in tree
    assert tree.count("<details open") == 3


def test_a_long_record_is_cut_with_a_note() -> None:
    tree = str(t.json_tree(list(range(t.MAX_TREE_VALUES + 10))))
    assert tree.count('<span class="v-num">') == t.MAX_TREE_VALUES
    assert "the rest is not shown" in tree


def test_a_title_comes_from_a_record_field_or_a_first_line() -> None:
    assert t.title_of(b'{"x": 1, "summary": "Brakes <b>fail</b>"}', "application/json") == (
        "Brakes fail"
    )
    assert t.title_of(b'{"record": {"title": "Inner"}}', "application/json") == "Inner"
    assert t.title_of(b'{"x": 1}', "application/json") is None
    assert t.title_of(b"\n# Returns policy\n\ntext", "text/markdown") == "Returns policy"
    assert t.title_of(b"\xff\xfe", "text/plain") is None
    assert len(t.title_of(("word " * 100).encode(), "text/plain") or "") == t.MAX_TITLE_CHARS


def test_a_unified_diff_side_by_side_pairs_removed_with_added_lines() -> None:
    old = "one\ntwo\nthree\nfour\n"
    new = "one\n2\nthree\nfour\nfive\n"
    rows = t.side_by_side(text_diff(old, new))
    kinds = [(r.kind, r.left_number, r.left, r.right_number, r.right) for r in rows]
    assert kinds[0][0] == "hunk"
    assert ("same", 1, "one", 1, "one") in kinds
    assert ("changed", 2, "two", 2, "2") in kinds
    assert ("added", None, None, 5, "five") in kinds
    assert ("same", 4, "four", 4, "four") in kinds


def test_a_body_view_reads_json_text_and_binary() -> None:
    assert t.body_view(b'{"a": 1}', "application/json").kind == "json"
    assert t.body_view(b"not json", "application/json").kind == "text"
    assert t.body_view(b"# hi", "text/markdown").text == "# hi"
    assert t.body_view(b"\xff\x00", "application/octet-stream").kind == "binary"
