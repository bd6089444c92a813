"""``--notify``: one message per run to each Apprise URL, for the events asked for, sent to
a real webhook on 127.0.0.1 (Apprise's ``json://`` plugin, which POSTs
``{"version", "title", "message", "attachments", "type"}``; see apprise's
``plugins/custom_json.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakes.forem import forem_entry
from fakes.github import manifest_toml
from tests.conftest import cli, write_manifest
from tests.observe.receivers import receiver

CORPUS = '[corpus]\nname = "s"\nnamespace = "s"\n'


def synthetic(count: int, changed: float = 0.0, complete: bool = True, seed: int = 0) -> str:
    entry = f'[[synthetic]]\nname = "a"\ncount = {count}\nchanged_percent = {changed}\n'
    entry += f"seed = {seed}\n"
    return CORPUS + entry + f"complete = {'true' if complete else 'false'}\n"


def refresh(manifest: Path, warehouse: Path, *args: Any, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    out = manifest.parent / "s.ndjson"
    return cli("refresh", manifest, "--warehouse", warehouse, "--out", out, *args, env=env)


def test_drift_sends_one_message_with_the_counts_and_the_worst_first(
    tmp_path: Path, warehouse_path: Path
) -> None:
    manifest = write_manifest(tmp_path, synthetic(3))
    with receiver() as hook:
        first = refresh(manifest, warehouse_path, "--notify", hook.url("json"))
        assert first.exit_code == 0, first.output
        assert hook.posts == []  # three new documents: counted, not news
        write_manifest(tmp_path, synthetic(3, changed=100.0))
        second = refresh(manifest, warehouse_path, "--notify", hook.url("json"), "--json")
    assert second.exit_code == 0, second.output
    assert json.loads(second.stdout)["observer_warnings"] == []
    [post] = hook.bodies
    assert post["title"] == "receipts refresh s: drift found"
    lines = post["message"].splitlines()
    assert lines[0].startswith("refresh s: ok (run 2, ")
    assert lines[1] == "drift found: 3 document(s)"
    assert lines[2:5] == [f"  synthetic/record/a-{i}" for i in range(3)]
    assert "synthetic: changed 3" in lines
    assert lines[-1] == "full report: receipts drift MANIFEST (run 2)"


def forem_thread(fake_forem: Any) -> tuple[int, list[str]]:
    article = fake_forem.add_article("ana", "on-labels-2gc3", "On labels", "One label.")
    comments = [fake_forem.add_comment(article, f"Comment {n}.", "bo") for n in range(3)]
    return article, comments


def vanish_behind_a_stale_count(fake_forem: Any, article: int, comment: str) -> None:
    """The comment disappears; the article's counter still counts it, so the smaller tree is
    only a lower bound: not gone, unseen (as tests/warehouse/test_drift_unseen.py)."""
    fake_forem.destroy_comment(comment)
    fake_forem.articles[article].count_lag = 1


def test_documents_unseen_send_one_message_listing_them(
    tmp_path: Path, warehouse_path: Path, fake_forem: Any
) -> None:
    article, comments = forem_thread(fake_forem)
    manifest = write_manifest(tmp_path, CORPUS + forem_entry(id=article, reads_per_second=1000))
    assert refresh(manifest, warehouse_path).exit_code == 0
    vanish_behind_a_stale_count(fake_forem, article, comments[1])
    with receiver() as hook:
        args = ("--notify", hook.url("json"), "--notify-on", "unseen", "--notify-on", "drift")
        result = refresh(manifest, warehouse_path, *args)
        assert result.exit_code == 0, result.output
        [post] = hook.bodies
        assert post["title"] == "receipts refresh s: documents unseen"
        assert f"documents unseen: 1\n  forem/comment/{comments[1]}\n" in post["message"]
        assert "forem: unseen 1" in post["message"]

        fake_forem.articles[article].title = "On labels, revised"
        hook.posts.clear()
        result = refresh(
            manifest, warehouse_path, "--notify", hook.url("json"), "--notify-on", "drift"
        )
    [post] = hook.bodies
    assert post["title"] == "receipts refresh s: drift found"  # unseen was not asked for
    assert "documents unseen" not in post["message"]


def test_a_failed_entry_sends_one_message_and_keeps_exit_1(
    tmp_path: Path, warehouse_path: Path, fake_forem: Any
) -> None:
    text = synthetic(1) + forem_entry(id=404404, reads_per_second=1000)
    manifest = write_manifest(tmp_path, text)
    with receiver() as hook:
        result = refresh(manifest, warehouse_path, "--notify", hook.url("json"))
    assert result.exit_code == 1
    [post] = hook.bodies
    assert post["title"] == "receipts refresh s: the run failed"
    lines = post["message"].splitlines()
    assert lines[0].startswith("refresh s: failed (run 1, ")
    assert lines[1] == "FAILED: 1 failure(s)"
    assert lines[2].startswith("  forem: ")
    assert "forem: failed 1" in lines and "synthetic: new 1" in lines


REPO = "octo/hyphae"
README = f"github/{REPO}/README.md"
DAY1 = {"README.md": b"# Hyphae\n\nNotes, first draft.\n", "docs/claims.md": b"Every claim.\n"}
DAY2 = {"README.md": b"# Hyphae\n\nNotes, revised.\n", "docs/claims.md": b"Every claim.\n"}
FILES = {"README.md": "markdown", "docs/claims.md": "markdown"}


def test_a_claim_that_stops_holding_sends_one_message(
    tmp_path: Path, warehouse_path: Path, github: Any
) -> None:
    row = {"claim_id": "draft", "doc_id": README, "quote": "Notes, first draft.", "revision": 1}
    (tmp_path / "claims.ndjson").write_text(json.dumps(row) + "\n")
    table = '\n[claims]\nfile = "claims.ndjson"\n'
    sha1 = github.push(REPO, DAY1)
    manifest = write_manifest(tmp_path, manifest_toml(REPO, sha1, FILES) + table)
    with receiver() as hook:
        args = ("--notify", hook.url("json"), "--notify-on", "claims")
        assert refresh(manifest, warehouse_path, *args).exit_code == 0
        assert hook.posts == []  # a first check: nothing stopped holding
        sha2 = github.push(REPO, DAY2)
        write_manifest(tmp_path, manifest_toml(REPO, sha2, FILES) + table)
        result = refresh(manifest, warehouse_path, *args)
    assert result.exit_code == 0, result.output
    [post] = hook.bodies
    assert post["title"].endswith(": a claim changed status")
    assert f"claims changed status: 1\n  draft ({README}): holds -> stale\n" in post["message"]
    assert "claims: 1 stale" in post["message"]


def test_the_drift_listed_is_the_drift_counted_gone_first(
    tmp_path: Path, warehouse_path: Path, github: Any
) -> None:
    """A new file is counted, not listed; one that left the corpus comes before a changed
    one."""
    day1 = {"a.md": b"A.\n", "b.md": b"B.\n"}
    sha1 = github.push(REPO, day1)
    files = {"a.md": "markdown", "b.md": "markdown"}
    manifest = write_manifest(tmp_path, manifest_toml(REPO, sha1, files))
    assert refresh(manifest, warehouse_path).exit_code == 0
    sha2 = github.push(REPO, {"a.md": b"A, revised.\n", "c.md": b"C.\n"})
    more = {"a.md": "markdown", "c.md": "markdown"}
    write_manifest(tmp_path, manifest_toml(REPO, sha2, more))
    with receiver() as hook:
        result = refresh(manifest, warehouse_path, "--notify", hook.url("json"))
    [post] = hook.bodies
    lines = post["message"].splitlines()
    assert lines[1:4] == [
        "drift found: 2 document(s)",
        f"  github/{REPO}/b.md",
        f"  github/{REPO}/a.md",
    ], (result.output, lines)
