"""Publishing to an NDJSON file (the embedded default): the golden output of a fixture
corpus, stable bytes, the same plan and ledger as Sanity, and what a file target keeps."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pipelines.cli.exits import EXIT_FAILURE
from tests.conftest import cli
from tests.publish_corpus import manifest_text, register
from warehouse import pushes as ledger
from warehouse.store import Warehouse

GOLDEN = Path(__file__).parent.parent / "golden" / "publish_atlas.ndjson"
NOW = "2026-11-01T06:00:00Z"


@pytest.fixture(autouse=True)
def _fixture_source(monkeypatch: pytest.MonkeyPatch) -> None:
    register(monkeypatch)
    monkeypatch.setenv("RECEIPTS_NOW", NOW)
    # A warehouse draws its own log origin; the golden file names this one.
    monkeypatch.setenv("RECEIPTS_LOG_ORIGIN", "example.org/atlas-log")


def build(tmp_path: Path, name: str, text: str) -> tuple[Path, Path]:
    """A manifest and a warehouse holding its ingested corpus."""
    directory = tmp_path / name
    directory.mkdir(exist_ok=True)
    manifest = directory / "atlas.toml"
    manifest.write_text(text)
    warehouse = directory / "w.duckdb"
    assert cli("ingest", manifest, "--warehouse", warehouse).exit_code == 0
    return manifest, warehouse


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_ndjson_of_a_fixture_corpus_matches_the_golden_file(tmp_path: Path) -> None:
    manifest, warehouse = build(tmp_path, "a", manifest_text(synthetic=2))
    out = tmp_path / "atlas.ndjson"
    result = cli("publish", manifest, "--warehouse", warehouse, "--out", out)
    assert result.exit_code == 0, result.output
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_bytes(out.read_bytes())
    assert out.read_bytes() == GOLDEN.read_bytes()


def test_the_file_is_what_sanity_dataset_import_reads(tmp_path: Path) -> None:
    documents = [json.loads(line) for line in GOLDEN.read_bytes().splitlines()]
    ids = [d["_id"] for d in documents]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(isinstance(d["_type"], str) for d in documents)
    assert all(i.startswith("atlas.") for i in ids)

    def objects_in_arrays(value: Any) -> list[dict[str, Any]]:
        if isinstance(value, dict):
            return [o for v in value.values() for o in objects_in_arrays(v)]
        if isinstance(value, list):
            nested = [o for v in value for o in objects_in_arrays(v)]
            return [v for v in value if isinstance(v, dict)] + nested
        return []

    found = [o for d in documents for o in objects_in_arrays(d)]
    assert found and all("_key" in o for o in found)
    for line in GOLDEN.read_bytes().splitlines():
        assert line == json.dumps(
            json.loads(line), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode("utf-8")


def test_identical_corpora_give_identical_files_in_the_default_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = []
    for name in ("one", "two"):
        manifest, warehouse = build(tmp_path, name, manifest_text(synthetic=3))
        monkeypatch.chdir(tmp_path / name)
        result = cli("publish", manifest, "--warehouse", warehouse)
        assert result.exit_code == 0
        assert f"ndjson:{(tmp_path / name / 'out' / 'atlas.ndjson').resolve()}" in result.stdout
        outputs.append((tmp_path / name / "out" / "atlas.ndjson").read_bytes())
    assert outputs[0] == outputs[1]


def test_a_second_push_sends_nothing_and_leaves_the_file_alone(tmp_path: Path) -> None:
    manifest, warehouse = build(tmp_path, "a", manifest_text())
    out = tmp_path / "atlas.ndjson"
    cli("publish", manifest, "--warehouse", warehouse, "--out", out)
    written = out.stat().st_mtime_ns
    os.utime(out, ns=(written - 10**9, written - 10**9))
    second = cli("publish", manifest, "--warehouse", warehouse, "--out", out, "--json")
    report = json.loads(second.stdout)
    assert report["applied"] == 0 and report["plan"]["unchanged"] == 4
    assert out.stat().st_mtime_ns == written - 10**9
    with Warehouse.open(str(warehouse), read_only=True) as wh:
        rows = ledger.pushes(wh)
    assert [(r["target"], r["applied"]) for r in rows] == [
        (f"ndjson:{out}", 0),
        (f"ndjson:{out}", 4),
    ]


def test_updates_orphans_and_unrelated_lines_in_an_existing_file(tmp_path: Path) -> None:
    manifest, warehouse = build(tmp_path, "a", manifest_text())
    out = tmp_path / "atlas.ndjson"
    cli("publish", manifest, "--warehouse", warehouse, "--out", out)
    foreign = b'{"_type": "page",   "_id": "homepage"}'
    out.write_bytes(foreign + b"\n" + out.read_bytes())
    # upstream changed one comment and dropped another
    manifest.write_text(manifest_text(revision=1, drop=["comment/2a4bc"]))
    cli("ingest", manifest, "--warehouse", warehouse)

    kept = cli("publish", manifest, "--warehouse", warehouse, "--out", out, "--json")
    report = json.loads(kept.stdout)
    assert (report["update"], report["orphan"]) == (
        ["atlas.comment.2a4b9"],
        ["atlas.comment.2a4bc"],
    )
    assert report["receipt"]["unrelated_before"] == report["receipt"]["unrelated_after"] == 1
    by_id = {d["_id"]: d for d in lines(out)}
    assert by_id["atlas.comment.2a4b9"]["body"] == "<p>Nice, edited 1</p>"
    assert "atlas.comment.2a4bc" in by_id  # kept without --prune
    assert out.read_bytes().splitlines()[-1] == foreign  # byte for byte, in _id order

    pruned = cli("publish", manifest, "--warehouse", warehouse, "--out", out, "--prune")
    assert pruned.exit_code == 0
    assert [d["_id"] for d in lines(out)] == [
        "atlas.article.101",
        "atlas.comment.2a4b9",
        "atlas.record.24V064000",
        "homepage",
    ]


def test_a_file_that_is_not_a_dataset_is_refused(tmp_path: Path) -> None:
    manifest, warehouse = build(tmp_path, "a", manifest_text())
    out = tmp_path / "atlas.ndjson"
    out.write_text('{"_id": "a", "_type": "t"}\nnot json\n')
    result = cli("publish", manifest, "--warehouse", warehouse, "--out", out)
    assert result.exit_code == EXIT_FAILURE
    assert f"{out}:2: not a JSON document with an _id" in result.stderr
    assert out.read_text() == '{"_id": "a", "_type": "t"}\nnot json\n'


@pytest.mark.parametrize(
    ("present", "named"),
    [
        ({"SANITY_PROJECT_ID": "proj", "SANITY_DATASET": "production"}, "SANITY_TOKEN not"),
        ({"SANITY_TOKEN": "sk-half-configured-token-0123456789"}, "SANITY_PROJECT_ID, SANITY_"),
        ({"SANITY_API_HOST": "https://proxy.test"}, "SANITY_PROJECT_ID, SANITY_DATASET"),
    ],
)
def test_a_half_configured_sanity_is_a_usage_error_not_a_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, present: dict[str, str], named: str
) -> None:
    manifest, warehouse = build(tmp_path, "a", manifest_text())
    monkeypatch.chdir(tmp_path)
    for name, value in present.items():
        monkeypatch.setenv(name, value)
    result = cli("publish", manifest, "--warehouse", warehouse)
    assert result.exit_code == 2, result.output
    assert "Sanity is half configured" in result.stderr and named in result.stderr
    assert "--target ndjson:PATH" in result.stderr
    assert "sk-half" not in result.output
    assert not (tmp_path / "out").exists()
    # choosing the file explicitly works, with either spelling
    chosen = tmp_path / "chosen.ndjson"
    explicit = cli("publish", manifest, "--warehouse", warehouse, "--target", f"ndjson:{chosen}")
    assert explicit.exit_code == 0, explicit.output
    assert f"ndjson:{chosen}" in explicit.stdout and chosen.exists()
    again = cli("publish", manifest, "--warehouse", warehouse, "--out", chosen)
    assert again.exit_code == 0 and "applied 0 mutation(s)" in again.stdout


def test_target_must_be_ndjson_path(tmp_path: Path) -> None:
    manifest, warehouse = build(tmp_path, "a", manifest_text())
    result = cli("publish", manifest, "--warehouse", warehouse, "--target", "sanity:prod")
    assert result.exit_code == 2
    assert "expected ndjson:PATH" in result.stderr


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("SANITY_DATASET", "Prod Data", "SANITY_DATASET='Prod Data' is not a dataset name"),
        ("SANITY_API_VERSION", "2025-2-19", "SANITY_API_VERSION='2025-2-19' is not YYYY-MM-DD"),
        # Digits and letters outside ASCII look like a version or a name, and are neither.
        ("SANITY_API_VERSION", "\u0662\u0660\u0662\u0665-02-19", "is not YYYY-MM-DD"),
        ("SANITY_DATASET", "produ\u00e7\u00e3o", "is not a dataset name"),
        ("SANITY_PROJECT_ID", "pro\u212aj", "is not a Sanity project id"),  # a Kelvin sign
        ("SANITY_API_HOST", "proxy.local", "an http(s):// URL"),
    ],
)
def test_bad_sanity_settings_are_usage_errors_without_the_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    manifest, warehouse = build(tmp_path, "a", manifest_text())
    token = "sk-settings-test-token-0123456789"
    for key, setting in {
        "SANITY_PROJECT_ID": "proj",
        "SANITY_DATASET": "production",
        "SANITY_TOKEN": token,
        name: value,
    }.items():
        monkeypatch.setenv(key, setting)
    result = cli("publish", manifest, "--warehouse", warehouse)
    assert result.exit_code == 2
    assert message in result.stderr and token not in result.output


def test_a_rename_onto_a_field_the_documents_already_have_is_a_manifest_error(
    tmp_path: Path,
) -> None:
    # articles have title, tags and body: renaming title to body would overwrite one with
    # the other; swapping both is fine
    onto = '[publish.fields.article]\ntitle = "body"\n'
    manifest, warehouse = build(tmp_path, "a", manifest_text(publish=onto))
    out = tmp_path / "atlas.ndjson"
    result = cli("publish", manifest, "--warehouse", warehouse, "--out", out)
    assert result.exit_code == 2, result.output
    assert (
        f"{manifest}: [publish.fields.article], field 'title': renamed to 'body', a field "
        "article documents already have"
    ) in result.stderr
    assert not out.exists()
    swap = '[publish.fields.article]\ntitle = "body"\nbody = "text"\n'
    manifest, warehouse = build(tmp_path, "b", manifest_text(publish=swap))
    assert cli("publish", manifest, "--warehouse", warehouse, "--out", out).exit_code == 0
    article = next(d for d in lines(out) if d["_type"] == "article")
    assert (article["body"], article["text"]) == (
        "Ask the record",
        "Every sentence traced to its source.",
    )


def test_each_document_carries_the_address_of_its_proof(tmp_path: Path) -> None:
    """provenance's logIndex, logTreeSize and logOrigin lead to the revision's entry: the
    proof `receipts log prove` gives for docId/revision names that index, and the log's
    checkpoint has that origin and covers that size."""
    manifest, warehouse = build(tmp_path, "a", manifest_text(synthetic=2))
    out = tmp_path / "atlas.ndjson"
    assert cli("publish", manifest, "--warehouse", warehouse, "--out", out).exit_code == 0
    checkpoint = cli("log", "checkpoint", "--warehouse", warehouse).stdout
    origin, size = checkpoint.splitlines()[:2]
    for document in lines(out):
        provenance = document["provenance"]
        assert provenance["logOrigin"] == origin == "example.org/atlas-log"
        assert provenance["logTreeSize"] <= int(size)
        proof = cli(
            "log",
            "prove",
            provenance["docId"],
            "--revision",
            provenance["revision"],
            "--warehouse",
            warehouse,
        )
        assert proof.exit_code == 0, proof.output
        assert f"index {provenance['logIndex']}\n" in proof.stdout
