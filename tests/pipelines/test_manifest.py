from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.manifest import load_manifest, parse_manifest
from tests.conftest import REPO, cli, write_manifest
from warehouse.errors import ManifestError

CORPUS = '[corpus]\nname = "demo"\nnamespace = "demoCorpus"\n'
SYNTH = '[[synthetic]]\nname = "a"\ncount = 3\n'

VALID_MANIFESTS = {
    "minimal": CORPUS + SYNTH,
    "description": CORPUS.replace('"demoCorpus"', '"demoCorpus"\ndescription = "x"') + SYNTH,
    "namespace with '-' and '_'": CORPUS.replace("demoCorpus", "demo_corpus-2") + SYNTH,
}

INVALID_MANIFESTS = {
    "not toml": ("[corpus", "not valid TOML"),
    "no corpus": (SYNTH, "missing [corpus] table"),
    "unknown table": (
        CORPUS + SYNTH + "[[rss]]\nurl='x'\n",
        "unknown table [rss]; valid tables: corpus, ",
    ),
    "no entries": (CORPUS, "declares no entries"),
    "bad namespace": (
        CORPUS.replace("demoCorpus", "drafts.x") + SYNTH,
        "[corpus], field 'namespace': Value error, namespace must not start with the reserved",
    ),
    "namespace chars": (
        CORPUS.replace("demoCorpus", "demo corpus") + SYNTH,
        "[corpus], field 'namespace'",
    ),
    "nested namespace": (
        CORPUS.replace("demoCorpus", "hyphaeAtlas.file") + SYNTH,
        "[corpus], field 'namespace': Value error, namespace 'hyphaeAtlas.file' must be a "
        "single id segment (no '.')",
    ),
    "namespace making ns..x ids": (
        CORPUS.replace("demoCorpus", "demo.") + SYNTH,
        "[corpus], field 'namespace': Value error, namespace must be dot-separated segments",
    ),
    "namespace with an empty segment": (
        CORPUS.replace("demoCorpus", "demo..corpus") + SYNTH,
        "[corpus], field 'namespace'",
    ),
    "control character in the description": (
        CORPUS + 'description = "Atlas\\u001b[2J"\n' + SYNTH,
        "[corpus], field 'description': Value error, contains the control character U+001B",
    ),
    "control character in the name": (
        CORPUS.replace('"demo"', '"demo\\u0007"') + SYNTH,
        "[corpus], field 'name': String should match pattern",
    ),
    "corpus extra field": (
        CORPUS + 'owner = "me"\n' + SYNTH,
        "[corpus], field 'owner': unknown field; valid fields: description, name, namespace",
    ),
    "entry extra field": (
        CORPUS + SYNTH + 'colour = "red"\n',
        "[[synthetic]] entry 1 (a), field 'colour': unknown field; valid fields: changed_percent,",
    ),
    "entry missing field": (
        CORPUS + '[[synthetic]]\nname = "a"\n',
        "[[synthetic]] entry 1 (a), field 'count': required field is missing",
    ),
    "second entry wrong type": (
        CORPUS + SYNTH + '[[synthetic]]\nname = "b"\ncount = "many"\n',
        "[[synthetic]] entry 2 (b), field 'count': Input should be a valid integer",
    ),
    "table not array": (
        CORPUS + '[synthetic]\nname = "a"\n',
        "[[synthetic]] must be an array of tables",
    ),
}


@pytest.mark.parametrize("text", VALID_MANIFESTS.values(), ids=VALID_MANIFESTS.keys())
def test_valid_manifests(text: str) -> None:
    manifest = parse_manifest(text, Path("m.toml"))
    assert manifest.corpus.name == "demo"
    assert manifest.sources() == ["synthetic"]


@pytest.mark.parametrize(
    ("text", "message"), INVALID_MANIFESTS.values(), ids=INVALID_MANIFESTS.keys()
)
def test_invalid_manifests_name_file_entry_and_field(text: str, message: str) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(text, Path("manifests/bad.toml"))
    assert str(caught.value).startswith("manifests/bad.toml: ")
    assert message in str(caught.value)


def test_manifest_hash_is_the_hash_of_the_file(tmp_path: Path) -> None:
    path = write_manifest(tmp_path, CORPUS + SYNTH)
    import hashlib

    assert load_manifest(path).content_hash == hashlib.sha256(path.read_bytes()).hexdigest()


def test_manifest_check_cli_ok_and_bad(tmp_path: Path) -> None:
    good = write_manifest(tmp_path, CORPUS + SYNTH, "good.toml")
    result = cli("manifest", "check", good)
    assert result.exit_code == 0
    assert "ok" in result.output

    bad = write_manifest(tmp_path, CORPUS + SYNTH + "extra = 1\n", "bad.toml")
    result = cli("manifest", "check", bad)
    assert result.exit_code == 2
    assert "bad.toml" in result.stderr and "field 'extra'" in result.stderr
    assert "Traceback" not in result.output

    missing = cli("manifest", "check", tmp_path / "nope.toml")
    assert missing.exit_code == 2
    assert "no such manifest" in missing.stderr


@pytest.mark.parametrize("path", sorted((REPO / "manifests").glob("*.toml")), ids=lambda p: p.name)
def test_bundled_manifests_are_valid(path: Path) -> None:
    result = cli("manifest", "check", path, "--json")
    assert result.exit_code == 0, result.output
