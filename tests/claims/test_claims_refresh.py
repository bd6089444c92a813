"""Claims re-checked by every ``receipts refresh``, from a claims file and from a GROQ query
against the Content Lake fake; and the drift report's section of changed claims."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakes.forem import FakeForem
from fakes.github import FakeGitHub, manifest_toml
from fakes.node_lake import NodeLake
from tests.conftest import cli, write_manifest

REPO = "octo/hyphae"
README = f"github/{REPO}/README.md"
CLAIMS_MD = f"github/{REPO}/docs/claims.md"
DAY1 = {
    "README.md": b"# Hyphae\n\nNotes, first draft.\n",
    "docs/claims.md": b"Every claim cites.\n",
}
DAY2 = {"README.md": b"# Hyphae\n\nNotes, revised.\n", "docs/claims.md": b"Every claim cites.\n"}
FILES = {"README.md": "markdown", "docs/claims.md": "markdown"}


def refresh(manifest: Path, warehouse: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = cli("refresh", manifest, "--warehouse", warehouse, "--json", *args)
    return result.exit_code, json.loads(result.stdout)


def write_claims(directory: Path, rows: list[dict[str, Any]]) -> None:
    text = "".join(json.dumps(row) + "\n" for row in rows)
    (directory / "claims.ndjson").write_text(text, encoding="utf-8")


def test_refresh_rechecks_claims_and_lists_those_that_changed(
    tmp_path: Path,
    warehouse_path: Path,
    upstreams: tuple[FakeGitHub, FakeForem, NodeLake],
) -> None:
    github, _, _ = upstreams
    claims = [
        {"claim_id": "draft", "doc_id": README, "quote": "Notes, first draft.", "revision": 1},
        {"claim_id": "cites", "doc_id": CLAIMS_MD, "quote": "Every claim cites", "revision": 1},
    ]
    write_claims(tmp_path, claims)
    table = '\n[claims]\nfile = "claims.ndjson"\n'
    sha1 = github.push(REPO, DAY1)
    manifest = write_manifest(tmp_path, manifest_toml(REPO, sha1, FILES) + table)

    code, day1 = refresh(manifest, warehouse_path)
    assert code == 0, day1
    assert day1["claims"]["counts"]["holds"] == 2
    assert day1["claims"]["changed"] == []

    sha2 = github.push(REPO, DAY2)
    write_manifest(tmp_path, manifest_toml(REPO, sha2, FILES) + table)
    code, day2 = refresh(manifest, warehouse_path)
    assert code == 0, day2
    assert day2["claims"]["changed"] == [
        {
            "claim_id": "draft",
            "doc_id": README,
            "before": "holds",
            "after": "stale",
            "at_revision": 2,
            "checked_revision": 2,
        }
    ]

    # No upstream change, but a new claim that does not hold: --fail-on-drift counts it.
    write_claims(
        tmp_path,
        [
            *claims,
            {"claim_id": "wrong", "doc_id": README, "quote": "Notes, revised.", "revision": 1},
        ],
    )
    code, day3 = refresh(manifest, warehouse_path, "--fail-on-drift")
    assert day3["drift"]["found"] is False
    assert [(c["claim_id"], c["after"]) for c in day3["claims"]["changed"]] == [
        ("wrong", "misattributed")
    ]
    assert code == 3

    text = cli("refresh", manifest, "--warehouse", warehouse_path).output
    assert "claims: 1 holds, 1 stale, 1 misattributed; changed in this run: 0" in text

    # The ledger tells when the citation stopped holding: after day 2's run.
    history = json.loads(
        cli("claims", "history", "draft", "--warehouse", warehouse_path, "--json").stdout
    )
    statuses = [(c["run_id"], c["status"]) for c in history["checks"]]
    assert statuses[:2] == [(day1["run"]["run_id"], "holds"), (day2["run"]["run_id"], "stale")]

    # The drift report of day 2's run lists the changed claim, in every format.
    run2 = str(day2["run"]["run_id"])
    until = ("--since", str(day1["run"]["run_id"]), "--until", run2)
    report = json.loads(
        cli("drift", manifest, "--warehouse", warehouse_path, *until, "--json").stdout
    )
    assert [c["claim_id"] for c in report["claims"]["changed"]] == ["draft"]
    for fmt, marker in (("text", "claims changed"), ("md", "## Claims"), ("html", 'id="claims"')):
        shown = cli("drift", manifest, "--warehouse", warehouse_path, *until, "--format", fmt)
        assert marker in shown.output and "holds → stale" in shown.output, shown.output


def test_a_claims_file_that_cannot_be_read_fails_the_refresh_not_the_ingest(
    tmp_path: Path,
    warehouse_path: Path,
    upstreams: tuple[FakeGitHub, FakeForem, NodeLake],
) -> None:
    github, _, _ = upstreams
    sha1 = github.push(REPO, DAY1)
    toml = manifest_toml(REPO, sha1, FILES) + '\n[claims]\nfile = "nowhere.ndjson"\n'
    manifest = write_manifest(tmp_path, toml)
    code, result = refresh(manifest, warehouse_path)
    assert code == 1
    assert result["run"]["status"] == "ok" and result["push"]["status"] == "ok"
    assert "no such claims file" in result["claims_error"]


def test_claims_from_a_groq_query_map_published_ids_to_doc_ids(
    tmp_path: Path,
    warehouse_path: Path,
    upstreams: tuple[FakeGitHub, FakeForem, NodeLake],
) -> None:
    github, _, lake = upstreams
    sha1 = github.push(REPO, DAY1)
    manifest = write_manifest(tmp_path, manifest_toml(REPO, sha1, FILES))
    assert refresh(manifest, warehouse_path)[0] == 0
    published = {
        doc["provenance"]["docId"]: doc_id
        for doc_id, doc in lake.documents.items()
        if isinstance(doc.get("provenance"), dict)
    }
    answers: list[dict[str, Any]] = [
        {"_id": "answer-1", "said": "Notes, first draft.", "cites": {"_ref": published[README]}},
        {"_id": "answer-2", "said": "Every claim cites.", "cites": published[CLAIMS_MD], "rev": 2},
        {"_id": "answer-3", "said": "Nothing like this.", "cites": {"_ref": published[README]}},
        {"_id": "answer-4", "said": "Anything.", "cites": {"_ref": "atlas.nope", "_weak": True}},
        {"_id": "answer-5", "said": "Every claim", "source": CLAIMS_MD},
    ]
    for answer in answers:
        lake.put({"_type": "answer", "rev": 1, **answer})
    groq = (
        '*[_type == "answer"] | order(_id) {_id, "claim": _id, said, "document": cites, '
        '"doc": source, rev}'
    )
    table = (
        "\n[claims]\n"
        f"groq = {json.dumps(groq)}\n"
        'fields = { claim_id = "claim", quote = "said", revision = "rev", doc_id = "doc" }\n'
    )
    write_manifest(tmp_path, manifest_toml(REPO, sha1, FILES) + table)

    result = cli("verify-claims", manifest, "--warehouse", warehouse_path, "--json")
    report = json.loads(result.stdout)
    assert result.exit_code == 1  # answer-4 cannot be mapped to a document
    statuses = {c["claim_id"]: (c["doc_id"], c["status"]) for c in report["claims"]}
    assert statuses == {
        "answer-1": (README, "holds"),
        "answer-2": (CLAIMS_MD, "unknown"),
        "answer-3": (README, "missing"),
        "answer-5": (CLAIMS_MD, "holds"),
    }
    assert report["bad_rows"] == [
        {
            "origin": "_id answer-4",
            "claim_id": None,
            "problem": "points at atlas.nope, which has no provenance.docId in the dataset",
        }
    ]


def test_a_groq_claims_table_needs_the_sanity_settings(
    tmp_path: Path, warehouse_path: Path, upstreams: tuple[FakeGitHub, FakeForem, NodeLake]
) -> None:
    github, _, _ = upstreams
    sha1 = github.push(REPO, DAY1)
    toml = manifest_toml(REPO, sha1, FILES) + "\n[claims]\ngroq = \"*[_type == 'answer']\"\n"
    manifest = write_manifest(tmp_path, toml)
    result = cli("verify-claims", manifest, "--warehouse", warehouse_path, env={"SANITY_TOKEN": ""})
    assert result.exit_code == 2 and "SANITY_TOKEN" in result.stderr
