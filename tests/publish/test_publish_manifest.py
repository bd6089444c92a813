"""The optional ``[publish]`` table of a manifest: renames, batch size, concurrency."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.manifest import Publish, parse_manifest
from tests.conftest import REPO, cli
from warehouse.errors import ManifestError

CORPUS = '[corpus]\nname = "demo"\nnamespace = "demoCorpus"\n'
SYNTH = '[[synthetic]]\nname = "a"\ncount = 3\n'

VALID_PUBLISH = {
    "absent": ("", Publish()),
    "empty": ("[publish]\n", Publish()),
    "type rename": (
        '[publish]\ntypes = { safetyRecord = "tsb" }\n',
        Publish(types={"safetyRecord": "tsb"}),
    ),
    "field renames": (
        '[publish.fields.safetyRecord]\nsummary = "body"\ntitle = "heading"\n',
        Publish(fields={"safetyRecord": {"summary": "body", "title": "heading"}}),
    ),
    "batching": (
        "[publish]\nbatch_bytes = 100000\nbatch_mutations = 50\nconcurrency = 2\n",
        Publish(batch_bytes=100_000, batch_mutations=50, concurrency=2),
    ),
}

INVALID_PUBLISH = {
    "unknown key": (
        "[publish]\nbatch_size = 3\n",
        "[publish], field 'batch_size': unknown field; valid fields: batch_bytes, "
        "batch_mutations, concurrency, fields, oversize, types",
    ),
    "unknown oversize policy": (
        '[publish]\noversize = "truncate"\n',
        "[publish], field 'oversize'",
    ),
    "bad type name": (
        '[publish.types]\nsafetyRecord = "tsb record"\n',
        "[publish], field 'types': Value error, type 'safetyRecord' renamed to 'tsb record'",
    ),
    "reserved field": (
        '[publish.fields.article]\ntitle = "provenance"\n',
        "field article.title renamed to 'provenance'",
    ),
    "field clash": (
        '[publish.fields.article]\ntitle = "name"\nslug = "name"\n',
        "fields of article renamed to the same name: ['name']",
    ),
    "control character in a renamed field": (
        '[publish.fields.article]\n"ti\\u0000tle" = "heading"\n',
        "[publish], field 'fields': Value error, the name 'ti\\x00tle' contains the control "
        "character U+0000",
    ),
    "control character in a type": (
        '[publish.types]\n"safety\\u007fRecord" = "tsb"\n',
        "[publish], field 'types': Value error, the name 'safety\\x7fRecord' contains the "
        "control character U+007F",
    ),
    "batch too small": ("[publish]\nbatch_bytes = 10\n", "field 'batch_bytes'"),
    "concurrency zero": ("[publish]\nconcurrency = 0\n", "field 'concurrency'"),
    "not a table": ('publish = "yes"\n', "[publish] must be a table"),
}


@pytest.mark.parametrize(("text", "expected"), VALID_PUBLISH.values(), ids=VALID_PUBLISH.keys())
def test_valid_publish_tables(text: str, expected: Publish) -> None:
    manifest = parse_manifest(text + CORPUS + SYNTH, Path("m.toml"))
    assert manifest.publish == expected


@pytest.mark.parametrize(("text", "message"), INVALID_PUBLISH.values(), ids=INVALID_PUBLISH.keys())
def test_invalid_publish_tables_name_the_field(text: str, message: str) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(text + CORPUS + SYNTH, Path("bad.toml"))
    assert str(caught.value).startswith("bad.toml: ")
    assert message in str(caught.value)


def test_publish_defaults_follow_the_official_importer() -> None:
    # ~256 KB transactions, a handful at once: what `sanity dataset import` does.
    defaults = Publish()
    assert defaults.batch_bytes == 250_000
    assert defaults.batch_mutations is None
    assert 1 < defaults.concurrency <= 6


def test_the_docs_example_is_a_valid_publish_table() -> None:
    page = (REPO / "docs" / "publishing.md").read_text()
    example = page.split("```toml\n", 1)[1].split("```", 1)[0]
    manifest = parse_manifest(example + CORPUS + SYNTH, Path("docs/publishing.md"))
    assert manifest.publish.types == {"safetyRecord": "tsb"}
    assert manifest.publish.fields == {"safetyRecord": {"summary": "body"}}


@pytest.mark.parametrize("command", ["publish", "pushes"])
def test_publish_commands_have_help_and_appear_in_the_docs(command: str) -> None:
    result = cli(command, "--help")
    assert result.exit_code == 0
    assert "--json" in result.output and len(result.output.splitlines()) > 5
    assert f"`receipts {command} " in (REPO / "docs" / "commands.md").read_text()
