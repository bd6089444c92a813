"""The warehouse the serve tests read, built once per session the way users build one: the
fixture corpus's four runs through the ingest engine (a complaint edited, a Markdown file
changed at a new commit, a tombstone and its restoration), a fifth run bringing hostile
documents (a script, a bidi override, terminal escapes), a synthetic corpus ingested and
published with ``receipts ingest`` / ``receipts publish`` (a push in the ledger) and a
claims check recorded by ``receipts verify-claims``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import corpus_fixture as fixture
from tests.conftest import cli, write_manifest
from warehouse.canonical import canonical_json
from warehouse.records import Listing, Provenance, Record
from warehouse.store import Warehouse

HOSTILE_SCRIPT = "<script>document.title='pwned'</script>"
HOSTILE_IMG = "<img src=x onerror=\"document.title='pwned'\">"
BIDI = "\u202e"
ESCAPE = "\x1b[31m"
HOSTILE_MD = "github/acme/evil/README.md"
HOSTILE_JSON = "forem/comment/evil1"
HOSTILE_TEXT = (
    f"# Totally normal {BIDI}txt.exe\n\n{HOSTILE_SCRIPT}\n\n{HOSTILE_IMG}\n\nred {ESCAPE}text\n"
)

SYNTHETIC = """
[corpus]
name = "syn"
namespace = "syn"

[[synthetic]]
name = "alpha"
count = 3
"""
CLAIMS = [
    {
        "claim_id": "screen-blank",
        "doc_id": "nhtsa/complaint/11561420",
        "quote": "The infotainment screen goes blank at random.",
        "revision": 1,
    },
    {
        "claim_id": "stalled-highway",
        "doc_id": "nhtsa/complaint/11561421",
        "quote": "While driving on the highway at 65 mph",
        "revision": 1,
    },
]


def hostile_records() -> list[Listing]:
    markdown = Record(
        doc_id=HOSTILE_MD,
        kind="file",
        body=HOSTILE_TEXT.encode(),
        media_type="text/markdown",
        provenance=Provenance(
            url=f"https://raw.githubusercontent.com/acme/evil/{fixture.COMMIT_1}/README.md",
            commit=fixture.COMMIT_1,
            source_format="github-raw",
        ),
    )
    comment = Record(
        doc_id=HOSTILE_JSON,
        kind="comment",
        body=canonical_json(
            {
                "type_of": "comment",
                "id_code": "evil1",
                "body_html": f"<p>{HOSTILE_SCRIPT} {BIDI}gnp.exe {ESCAPE}</p>",
                "user": {"name": f"Mallory {BIDI}", "username": "mallory"},
            }
        ),
        provenance=Provenance(url="https://dev.to/api/comments?a_id=666", source_format="forem"),
    )
    return [
        Listing("github:acme/evil", [markdown]),
        Listing("forem:comments:a_id=666", [comment]),
    ]


def build(directory: Path) -> str:
    path = str(directory / "served.duckdb")
    with pytest.MonkeyPatch.context() as monkeypatch:
        fixture.build(path, monkeypatch)
        with Warehouse.open(path) as wh:
            fixture.run_at(wh, monkeypatch, "2026-11-03T08:00:00Z", "hostile", hostile_records())
        monkeypatch.setenv("RECEIPTS_NOW", "2026-11-03T09:00:00Z")
        manifest = write_manifest(directory, SYNTHETIC, "syn.toml")
        assert cli("ingest", manifest, "--warehouse", path).exit_code == 0
        out = directory / "syn.ndjson"
        assert cli("publish", manifest, "--warehouse", path, "--out", out).exit_code == 0
        claims = directory / "claims.ndjson"
        claims.write_text("".join(json.dumps(c) + "\n" for c in CLAIMS))
        checked = cli("verify-claims", "--file", claims, "--warehouse", path)
        assert checked.exit_code == 0, checked.output
    return path


_BUILT: dict[str, str] = {}


def shared(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One served warehouse per session, for tests that only read it."""
    if "path" not in _BUILT:
        _BUILT["path"] = build(tmp_path_factory.mktemp("served"))
    return _BUILT["path"]
