"""The Forem source through the command line, as a user runs it: ``receipts ingest``,
``receipts history``, ``receipts show``, ``receipts runs``.

The CLI paces in real time, so these manifests raise ``reads_per_second`` and the fake_forem
does not rate-limit (pacing and Retry-After are covered with a virtual clock in
``test_forem_ingest.py``), except for the bundled manifest, which runs at the default pace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.forem import ACCEPT_V1, FakeForem, forem_entry
from tests.conftest import REPO, cli, write_manifest

CORPUS = '[corpus]\nname = "forem-cli"\nnamespace = "foremCli"\n'
FAST = {"reads_per_second": 1000}


@pytest.fixture
def thread(fake_forem: FakeForem) -> dict[str, Any]:
    article = fake_forem.add_article(
        "ana", "on-labels-2gc3", "On labels", "One label, three failures."
    )
    first = fake_forem.add_comment(article, "I saw this too.", "bo")
    reply = fake_forem.add_comment(article, "Which version?", "ana", parent=first)
    second = fake_forem.add_comment(article, "It fails on empty input.", "cy")
    third = fake_forem.add_comment(article, "Same here.", "dee")
    return {"article": article, "comments": [first, reply, second, third]}


def ingest(tmp_path: Path, warehouse: Path, *entries: str) -> Any:
    manifest = write_manifest(tmp_path, CORPUS + "".join(entries))
    return cli("ingest", manifest, "--warehouse", warehouse, "--json")


def test_history_shows_a_comments_full_revision_chain(
    tmp_path: Path, warehouse_path: Path, fake_forem: FakeForem, thread: dict[str, Any]
) -> None:
    entry = forem_entry(id=thread["article"], **FAST)
    code = thread["comments"][2]
    steps = [
        lambda: None,
        lambda: fake_forem.edit_comment(code, "It fails on empty input (edited: and on None)."),
        lambda: fake_forem.delete_comment(code),
        lambda: fake_forem.destroy_comment(code),
    ]
    for step in steps:
        step()
        result = ingest(tmp_path, warehouse_path, entry)
        assert result.exit_code == 0, result.output

    doc = f"forem/comment/{code}"
    text = cli("history", doc, "--warehouse", warehouse_path)
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert lines[0] == doc
    header = lines[1].split()
    assert header[:5] == [
        "revision",
        "content_hash",
        "valid_from_run",
        "valid_from",
        "valid_until_run",
    ]
    revisions = [line.split() for line in lines[2:6]]
    assert [r[0] for r in revisions] == ["1", "2", "3", "4"]
    assert revisions[3][1:4] == ["TOMBSTONE", "(gone", "upstream)"]
    assert (revisions[0][2], revisions[0][4]) == ("1", "2")  # valid from run 1 until run 2
    seen = lines[lines.index("seen") + 2].split()
    assert seen[:2] == ["1", "1"]
    assert f"https://dev.to/api/comments?a_id={thread['article']}" in seen

    chain = json.loads(cli("history", doc, "--warehouse", warehouse_path, "--json").output)
    assert [r["valid_from_run"] for r in chain["revisions"]] == [1, 2, 3, 4]
    assert [r["attributes"] for r in chain["revisions"]] == [
        {"state": "present"},
        {"state": "present"},
        {"state": "deleted"},
        None,
    ]
    assert [r["tombstone"] for r in chain["revisions"]] == [False, False, False, True]

    wording = {
        n: json.loads(
            cli("show", doc, "--revision", n, "--warehouse", warehouse_path).stdout_bytes
        )["body_html"]
        for n in (1, 2, 3)
    }
    assert wording == {
        1: "<p>It fails on empty input.</p>",
        2: "<p>It fails on empty input (edited: and on None).</p>",
        3: "<p>[deleted]</p>",
    }


def test_ingest_json_reports_a_tree_below_comments_count(
    tmp_path: Path, warehouse_path: Path, fake_forem: FakeForem, thread: dict[str, Any]
) -> None:
    fake_forem.articles[thread["article"]].count_lag = 2
    result = ingest(tmp_path, warehouse_path, forem_entry(id=thread["article"], **FAST))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["status"] == "ok"
    assert report["warnings"] == [
        {
            "source": "forem",
            "entry": f"forem article {thread['article']}",
            "warning": f"article {thread['article']}: the comment tree holds 4 comments but "
            "the article reports comments_count 6; recorded as a lower bound, not as "
            "complete (no comment retired)",
        }
    ]
    ledger = json.loads(cli("runs", "--warehouse", warehouse_path, "--json").output)
    assert ledger[0]["warnings"] == report["warnings"]

    manifest = write_manifest(tmp_path, CORPUS + forem_entry(id=thread["article"], **FAST))
    plain = cli("ingest", manifest, "--warehouse", warehouse_path)
    assert "  warning: forem: forem article" in plain.output
    assert "recorded as a lower bound" in plain.output


def test_a_missing_article_exits_1_and_says_which(
    tmp_path: Path, warehouse_path: Path, fake_forem: FakeForem, thread: dict[str, Any]
) -> None:
    manifest = write_manifest(
        tmp_path,
        CORPUS + forem_entry(id=999, **FAST) + forem_entry(id=thread["article"], **FAST),
    )
    result = cli("ingest", manifest, "--warehouse", warehouse_path)
    assert result.exit_code == 1
    assert (
        "  FAILED forem: forem article 999: forem: article 999: not found "
        "(HTTP 404 for https://dev.to/api/articles/999)"
    ) in result.output
    assert "forem: new 5, changed 0, unchanged 0, gone 0, restored 0, failed 1" in result.output


def test_the_bundled_manifest_ingests_its_article_with_the_api_key_kept_secret(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "forem-key-do-not-leak-0123456789"
    monkeypatch.setenv("FOREM_API_KEY", secret)
    fake_forem = FakeForem()  # enforces 3 reads/s in real time: the manifest's default pace
    article = fake_forem.add_article(
        "kenielzep97", "my-harness-used-one-label-for-three-different-failures-2gc3"
    )
    top = fake_forem.add_comment(article, "Which labels did you split it into?", "bo")
    fake_forem.add_comment(article, "timeout, crash and wrong answer.", "kenielzep97", parent=top)
    recording = tmp_path / "session"
    with fake_forem.serving():
        result = cli(
            "ingest",
            REPO / "manifests" / "ask-the-record.toml",
            "--warehouse",
            warehouse_path,
            "--record",
            recording,
            "--json",
        )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["counts"]["forem"]["new"] == 3
    assert fake_forem.throttled == 0
    assert set(fake_forem.api_keys_seen) == {secret}
    assert all(ACCEPT_V1 in r.headers["accept"] for r in fake_forem.requests)

    recorded = [json.loads(p.read_text()) for p in recording.rglob("*.json")]
    assert len(recorded) == 2
    assert all(r["request_headers"]["accept"] == ACCEPT_V1 for r in recorded)
    assert all("api-key" not in r["request_headers"] for r in recorded)
    for where in [result.output, *(p.read_text() for p in recording.rglob("*.json"))]:
        assert secret not in where
    assert secret.encode() not in warehouse_path.read_bytes()
    ledger = cli("runs", "--warehouse", warehouse_path, "--json").output
    assert secret not in ledger
