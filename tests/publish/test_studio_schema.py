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
def demo_layout(tmp_path_factory: pytest.TempPathFactory) -> Layout:
    root = tmp_path_factory.mktemp("demo")
    layout = Layout(warehouse=root / "receipts.duckdb", out=root / "out")
    run_demo(layout, echo=lambda _line: None)
    return layout


@pytest.fixture(scope="module")
def demo_warehouse(demo_layout: Layout) -> Path:
    return demo_layout.warehouse


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

    # Each corpus alone: its published documents fit and preview with a title.
    previews = _compile_with_sanity(out, demo_warehouse.parent / "out" / f"{corpus}.ndjson")
    assert previews and all(str(shown.get("title") or "").strip() for shown in previews)


def _compile_with_sanity(directory: Path, *ndjson: Path) -> list[dict[str, Any]]:
    """Sanity's schema package must compile the files with no error and no warning, and
    every document of ``ndjson`` must be what the compiled schema describes (the Studio's
    rules, tests/node/check_documents.mjs). Returns the documents' list previews."""
    node = shutil.which("node")
    if node is None or not NODE_MODULES.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"node or the schema checker's packages are missing: {INSTALL}")
        pytest.skip(f"needs node and the schema checker's packages: {INSTALL}")
    run = subprocess.run(
        [node, str(CHECKER), str(directory), *map(str, ndjson)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    problems = [line for line in lines if "severity" in line or "document" in line]
    assert problems == [], problems
    assert run.returncode == 0, run.stderr
    compiled = lines[-1]["compiled"]
    assert compiled and all((directory / f"{name}.ts").exists() for name in compiled)
    return [line["preview"] for line in lines if "preview" in line]


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


def test_every_demo_document_fits_the_schema_and_previews_as_an_editor_reads_it(
    demo_layout: Layout, tmp_path: Path
) -> None:
    """All three demo corpora in one Studio: every published NDJSON document is valid under
    the generated schema (no unknown field, no wrong type, no "reference strength mismatch":
    the forem references are published ``_weak: true``), and its list preview has a title
    that is not blank, holds no HTML, and tells the documents of a type apart (Sanity's list
    previews: https://www.sanity.io/docs/previews-list-views)."""
    out = tmp_path / "schema"
    manifests = [REPO / "manifests" / f"{corpus}.toml" for corpus in CORPORA]
    result = cli("studio-schema", *manifests, "--warehouse", demo_layout.warehouse, "--out", out)
    assert result.exit_code == 0, result.output
    ndjson = sorted(demo_layout.out.glob("*.ndjson"))
    assert [p.stem for p in ndjson] == CORPORA
    previews = _compile_with_sanity(out, *ndjson)
    published = sum(len(p.read_text().splitlines()) for p in ndjson)
    assert len(previews) == published
    for shown in previews:
        assert str(shown["title"] or "").strip(), shown
        for text in (shown["title"], shown.get("subtitle") or ""):
            assert "<" not in text and "&lt;" not in text, shown
    by_type: dict[str, set[tuple[str, str]]] = {}
    for shown in previews:
        by_type.setdefault(shown["type"], set()).add((shown["title"], shown.get("subtitle")))
    counts = {t: sum(1 for p in previews if p["type"] == t) for t in by_type}
    assert {t: len(v) for t, v in by_type.items()} == counts

    texts = {p.name: p.read_text() for p in out.glob("*.ts")}
    record = texts["safetyRecord.ts"]
    assert 'title: "ODI number"' in record and 'title: "Park outside"' in record
    assert 'name: "summary",\n      title: "Summary",\n      type: "text"' in record
    assert "weak: true" in texts["comment.ts"]


def test_two_nhtsa_corpora_share_one_studio(demo_layout: Layout, tmp_path: Path) -> None:
    """Two NHTSA corpora published to one dataset both have ``_type: "safetyRecord"``; one
    Studio shows them through one type that covers both corpora's fields (two definitions
    of one name are a duplicate type the Studio refuses), and the published ``_type`` stays."""
    warehouse = tmp_path / "two.duckdb"
    shutil.copy(demo_layout.warehouse, warehouse)
    fleet = tmp_path / "cr-v-aeb-recalls.toml"
    text = (REPO / "manifests" / "cr-v-aeb.toml").read_text()
    fleet.write_text(
        text.replace('name = "cr-v-aeb"', 'name = "cr-v-aeb-recalls"')
        .replace('namespace = "crvAeb"', 'namespace = "crvAebRecalls"')
        .replace(
            'kinds = ["recalls", "complaints", "investigations", "communications"]',
            'kinds = ["recalls"]',
        )
    )
    fleet_ndjson = tmp_path / "recalls.ndjson"
    session = REPO / "demo" / "sessions" / "cr-v-aeb" / "day2"
    refresh = cli(
        "refresh", fleet, "--replay", session, "--out", fleet_ndjson, "--warehouse", warehouse
    )
    assert refresh.exit_code == 0, refresh.output
    out = tmp_path / "schema"
    crv = REPO / "manifests" / "cr-v-aeb.toml"
    result = cli("studio-schema", crv, fleet, "--warehouse", warehouse, "--out", out, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    crv_ndjson = demo_layout.out / "cr-v-aeb.ndjson"
    assert report["types"] == {
        "safetyRecord": {
            "documents": len(crv_ndjson.read_text().splitlines())
            + len(fleet_ndjson.read_text().splitlines()),
            "fields": report["types"]["safetyRecord"]["fields"],
        }
    }
    assert "export const schemaTypes = [safetyRecord]" in (out / "index.ts").read_text()
    assert "from cr-v-aeb, cr-v-aeb-recalls" in (out / "safetyRecord.ts").read_text()
    _compile_with_sanity(out, crv_ndjson, fleet_ndjson)


def test_reference_strength_follows_the_documents() -> None:
    """A reference published ``_weak: true`` is declared ``weak: true`` (else the Studio
    warns of a strength mismatch on each, sanity-io/sanity ReferenceField.tsx); a field
    holding both strengths cannot be declared and is refused."""
    ref = {"_type": "reference", "_ref": "n.a.1"}
    weak = {**ref, "_weak": True}
    docs = [_doc("n.a.1", "article"), _doc("n.c.1", "comment", article=weak)]
    (_article, comment) = infer_types(docs)
    assert _by_name(comment.fields)["article"]["weak"] is True
    (_article, comment) = infer_types([docs[0], _doc("n.c.1", "comment", article=ref)])
    assert "weak" not in _by_name(comment.fields)["article"]
    with pytest.raises(PublishError, match="weak and strong"):
        infer_types([*docs, _doc("n.c.2", "comment", article=ref)])


def test_paragraphs_are_text_and_titles_follow_a_renamed_field() -> None:
    """A short NHTSA summary is still a paragraph (``text``); a field renamed by the
    manifest keeps its curated title, and the preview selects it under its new name."""
    provenance = {"docId": "nhtsa/complaint/1", "ownedFields": ["body", "odiNumber"]}
    doc = {"_id": "n.complaint.1", "_type": "safetyRecord", "body": "short", "odiNumber": "1"}
    (record,) = infer_types(
        [{**doc, "provenance": provenance}], {"safetyRecord": {"summary": "body"}}
    )
    fields = _by_name(record.fields)
    assert fields["body"]["type"] == "text" and fields["body"]["title"] == "Summary"
    assert fields["odiNumber"]["title"] == "ODI number"
    assert record.preview is not None and record.preview.select["summary"] == "body"
