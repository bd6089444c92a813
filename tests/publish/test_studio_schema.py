"""``receipts studio-schema``: the Studio schema of the published documents, compiled with
Sanity's own schema package."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from demo.run import Layout, run_demo
from pipelines.publish.studio import infer_types
from tests.conftest import REPO, cli
from warehouse.errors import PublishError
from warehouse.store import Warehouse

CHECKER = REPO / "tests" / "node" / "check_schema.mjs"
NODE_MODULES = REPO / "tests" / "node" / "node_modules"
INSTALL = "make node-deps   (npm ci in tests/node)"


def _doc(_id: str, _type: str, **fields: Any) -> dict[str, Any]:
    owned = sorted(fields)
    return {"_id": _id, "_type": _type, **fields, "provenance": {"ownedFields": owned}}


def _by_name(fields: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in fields}


def test_fields_get_the_sanity_type_of_their_values() -> None:
    docs = [
        _doc(
            "ns.article.1",
            "article",
            title="A title",
            body="line one\nline two",
            url="https://dev.to/a/b",
            publishedAt="2026-10-27T12:00:00Z",
            day="2026-10-27",
            views=3,
            draft=False,
            tags=["a", "b"],
            author={"name": "Ana", "profile": "https://dev.to/ana"},
        ),
        _doc("ns.comment.c1", "comment", article={"_type": "reference", "_ref": "ns.article.1"}),
    ]
    (article, comment) = infer_types(docs)
    fields = _by_name(article.fields)
    assert {name: f["type"] for name, f in fields.items()} == {
        "author": "object",
        "body": "text",
        "day": "date",
        "draft": "boolean",
        "provenance": "object",
        "publishedAt": "datetime",
        "tags": "array",
        "title": "string",
        "url": "url",
        "views": "number",
    }
    assert fields["tags"]["of"] == [{"type": "string"}]
    assert _by_name(fields["author"]["fields"])["profile"]["type"] == "url"
    assert all(f["readOnly"] for f in article.fields)
    assert fields["provenance"]["group"] == "provenance"
    assert fields["provenance"]["options"] == {"collapsible": True, "collapsed": True}
    assert list(fields)[-1] == "provenance"
    assert _by_name(comment.fields)["article"] == {
        "name": "article",
        "title": "Article",
        "type": "reference",
        "readOnly": True,
        "to": [{"type": "article"}],
    }


def test_dates_and_urls_are_told_by_ascii_digits_and_whole_values() -> None:
    docs = [
        _doc(
            "ns.article.1",
            "article",
            arabic_day="\u0662\u0660\u0662\u0666-10-27",  # digits, but not ASCII ones
            day_and_more="2026-10-27\n",
            url_and_more="https://dev.to/a/b\n",
            day="2026-10-27",
        )
    ]
    (article,) = infer_types(docs)
    assert {name: f["type"] for name, f in _by_name(article.fields).items()} == {
        "arabic_day": "string",
        "day_and_more": "text",
        "url_and_more": "text",
        "day": "date",
        "provenance": "object",
    }


def test_a_field_the_pipeline_does_not_own_is_editable_and_strings_widen_to_text() -> None:
    docs = [
        {"_id": "n.t.1", "_type": "note", "label": "x", "provenance": {"ownedFields": []}},
        {"_id": "n.t.2", "_type": "note", "label": "https://example.org/x"},
    ]
    (note,) = infer_types(docs)
    assert _by_name(note.fields)["label"] == {"name": "label", "title": "Label", "type": "text"}


def test_a_field_with_numbers_and_strings_is_refused() -> None:
    docs = [_doc("n.t.1", "note", size=3), _doc("n.t.2", "note", size="3")]
    with pytest.raises(PublishError, match="size"):
        infer_types(docs)


@pytest.fixture(scope="module")
def demo_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo")
    layout = Layout(warehouse=root / "receipts.duckdb", out=root / "out")
    run_demo(layout, echo=lambda _line: None)
    return layout.warehouse


CORPORA = ["ask-the-record", "cr-v-aeb", "hyphae-atlas"]


@pytest.mark.parametrize("corpus", CORPORA)
def test_studio_schema_writes_one_file_per_type_and_keeps_editor_files(
    corpus: str, demo_warehouse: Path, tmp_path: Path
) -> None:
    manifest = REPO / "manifests" / f"{corpus}.toml"
    out = tmp_path / "schema"
    result = cli("studio-schema", manifest, "--warehouse", demo_warehouse, "--out", out, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    types = sorted(report["types"])
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["index.ts", *(f"{t}.ts" for t in types), *(f"{t}.editor.ts" for t in types)]
    )
    index = (out / "index.ts").read_text()
    assert f"export const schemaTypes = [{', '.join(types)}]" in index

    # An editor's own fields survive regeneration; the generated files are rewritten.
    editor = out / f"{types[0]}.editor.ts"
    editor.write_text(editor.read_text().replace("// defineField", "defineField"))
    mine = editor.read_text()
    again = cli("studio-schema", manifest, "--warehouse", demo_warehouse, "--out", out, "--json")
    assert json.loads(again.stdout)["kept"] == [f"{t}.editor.ts" for t in types]
    assert editor.read_text() == mine

    _compile_with_sanity(out)


def _compile_with_sanity(directory: Path) -> None:
    """Sanity's schema package must compile the files with no error and no warning."""
    node = shutil.which("node")
    if node is None or not NODE_MODULES.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"node or the schema checker's packages are missing: {INSTALL}")
        pytest.skip(f"needs node and the schema checker's packages: {INSTALL}")
    run = subprocess.run(
        [node, str(CHECKER), str(directory)], capture_output=True, text=True, timeout=120
    )
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    problems = [line for line in lines if "severity" in line]
    assert problems == [], problems
    assert run.returncode == 0, run.stderr
    compiled = lines[-1]["compiled"]
    assert compiled and all((directory / f"{name}.ts").exists() for name in compiled)


def test_the_checker_reports_a_broken_schema(demo_warehouse: Path, tmp_path: Path) -> None:
    """The compile check can fail: an unknown field type is an error Sanity reports."""
    out = tmp_path / "schema"
    manifest = REPO / "manifests" / "hyphae-atlas.toml"
    assert (
        cli("studio-schema", manifest, "--warehouse", demo_warehouse, "--out", out).exit_code == 0
    )
    generated = out / "sourceDocument.ts"
    generated.write_text(generated.read_text().replace('type: "string"', 'type: "strin"', 1))
    with pytest.raises(AssertionError, match="Unknown type: strin"):
        _compile_with_sanity(out)


def test_a_corpus_with_nothing_curated_is_a_usage_error(tmp_path: Path) -> None:
    manifest = REPO / "manifests" / "cr-v-aeb.toml"
    warehouse = tmp_path / "w.duckdb"
    Warehouse.open(str(warehouse)).close()
    result = cli("studio-schema", manifest, "--warehouse", warehouse, "--out", tmp_path / "s")
    assert result.exit_code == 2
    assert "ingest it first" in result.stderr
