"""``receipts refresh``: ingest, target drift, publish and the run's drift summary, with
the real sources against their fakes and the fake Content Lake, as cron runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.forem import FakeForem, forem_entry
from fakes.github import FakeGitHub, manifest_toml
from fakes.node_lake import NodeLake
from pipelines.checks.target_drift import classify
from tests.conftest import cli, write_manifest

REPO_NAME = "octo/hyphae"
DAY1 = {"README.md": b"# Hyphae\n\nNotes.\n", "docs/claims.md": b"Every claim cites.\n"}
DAY2 = {"README.md": b"# Hyphae\n\nNotes, revised.\n", "docs/claims.md": b"Every claim cites.\n"}


def refresh(manifest: Path, warehouse: Path, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = cli("refresh", manifest, "--warehouse", warehouse, "--json", *args)
    return result.exit_code, json.loads(result.stdout)


def ours(lake: NodeLake, type_name: str) -> dict[str, dict]:  # type: ignore[type-arg]
    return {
        k: v
        for k, v in lake.documents.items()
        if k.startswith("atlas.") and v["_type"] == type_name
    }


def test_two_refreshes_with_upstream_and_studio_changes(
    tmp_path: Path,
    warehouse_path: Path,
    upstreams: tuple[FakeGitHub, FakeForem, NodeLake],
) -> None:
    github, forem, lake = upstreams
    sha1 = github.push(REPO_NAME, DAY1)
    article = forem.add_article("ana", "on-labels-2gc3", "On labels", "One label, three failures.")
    first = forem.add_comment(article, "I saw this too.", "bo")
    same = forem.add_comment(article, "Same here.", "cy")
    reply = forem.add_comment(article, "Which version?", "ana", parent=first)
    files = {"README.md": "markdown", "docs/claims.md": "markdown"}
    manifest = write_manifest(
        tmp_path,
        manifest_toml(REPO_NAME, sha1, files) + forem_entry(id=article, reads_per_second=1000),
    )

    code, day1 = refresh(manifest, warehouse_path)
    assert code == 0, day1
    assert day1["run"]["status"] == "ok"
    assert day1["push"]["plan"]["create"] == 6
    receipt = day1["push"]["receipt"]
    assert (receipt["unrelated_before"], receipt["unrelated_after"]) == (1, 1)
    assert receipt["touched_by_us"] == 0
    assert day1["drift"]["since_run"] is None and day1["drift"]["counts"]["github"]["new"] == 2
    assert day1["target_drift"]["edited"] == [] and day1["target_drift"]["last_push"] is None

    # Between the runs: the upstream moves, and people work in the Studio.
    sha2 = github.push(REPO_NAME, DAY2)
    forem.delete_comment(first)
    write_manifest(
        tmp_path,
        manifest_toml(REPO_NAME, sha2, files) + forem_entry(id=article, reads_per_second=1000),
    )
    by_code = {v["idCode"]: k for k, v in ours(lake, "comment").items()}
    edited, noted = by_code[same], by_code[reply]
    removed = next(iter(ours(lake, "article")))
    lake.edit(edited, bodyHtml="<p>rewritten in the Studio</p>")  # an owned field
    lake.edit(noted, editorNote="checked by hand")  # a field we do not own
    lake.remove(removed)
    claims = next(
        k for k, v in ours(lake, "sourceDocument").items() if v["path"] == "docs/claims.md"
    )
    lake.put({**lake.documents[claims], "_id": "drafts." + claims, "title": "draft"})

    code, day2 = refresh(manifest, warehouse_path)
    assert code == 0, day2
    td = day2["target_drift"]
    assert td["edited"] == [edited]
    assert td["written"] == [noted]
    assert td["deleted"] == [removed]
    assert td["drafts"] == [claims]
    drift = day2["drift"]
    assert drift["since_run"] == day1["run"]["run_id"]
    assert drift["counts"]["github"]["changed"] == 1
    assert drift["counts"]["forem"]["changed"] == 1
    changed = {d["doc_id"]: d for d in drift["documents"]}
    readme = changed[f"github/{REPO_NAME}/README.md"]
    assert (readme["old_revision"], readme["new_revision"]) == (1, 2)
    # The Studio's note on a field we do not own survives the push.
    assert lake.documents[noted]["editorNote"] == "checked by hand"
    assert day2["push"]["receipt"]["touched_by_us"] == 0

    # Nothing changed since: no drift upstream, but the target drift is still reported and
    # --fail-on-drift turns it into exit 3.
    # The document deleted in the Studio was recreated by the push (the corpus still has
    # it); the Studio's edit of an owned field stays until the upstream changes that document.
    assert removed in lake.documents
    code, day3 = refresh(manifest, warehouse_path, "--fail-on-drift")
    assert day3["target_drift"]["edited"] == [edited]
    assert day3["target_drift"]["deleted"] == []
    assert day3["drift"]["found"] is False
    assert day3["push"]["plan"]["update"] == 0
    assert code == 3

    # The drift command reports the same target drift on demand, in every format.
    report = cli("drift", manifest, "--warehouse", warehouse_path, "--target", "--json")
    assert json.loads(report.stdout)["target_drift"]["edited"] == [edited]
    for fmt, marker in (
        ("text", "target drift in"),
        ("md", "## Target drift"),
        ("html", 'id="target-drift"'),
    ):
        shown = cli("drift", manifest, "--warehouse", warehouse_path, "--target", "--format", fmt)
        assert marker in shown.output and edited in shown.output
    assert (
        cli(
            "drift", manifest, "--warehouse", warehouse_path, "--target", "--fail-on-drift"
        ).exit_code
        == 3
    )
    assert cli("drift", "--warehouse", warehouse_path, "--target").exit_code == 2

    text = cli("refresh", manifest, "--warehouse", warehouse_path).output
    assert "target drift" in text and "edited in the target" in text
    assert "receipt: unrelated documents before 1, after 1; touched by us 0" in text


def test_the_text_summary_names_old_and_new_revisions(tmp_path: Path, warehouse_path: Path) -> None:
    text = '[corpus]\nname = "s"\nnamespace = "s"\n[[synthetic]]\nname = "a"\ncount = 2\n'
    manifest = write_manifest(tmp_path, text)
    out = tmp_path / "s.ndjson"
    first = cli("refresh", manifest, "--warehouse", warehouse_path, "--out", out).output
    assert "new      synthetic/record/a-0: revision 1 (" in first and "tombstone" not in first
    write_manifest(tmp_path, text.replace("count = 2", "count = 2\nchanged_percent = 100.0"))
    second = cli("refresh", manifest, "--warehouse", warehouse_path, "--out", out).output
    assert "changed  synthetic/record/a-0: revision 1 → revision 2 (" in second


def test_guard_trip_exits_4_and_keeps_the_ingest(
    tmp_path: Path,
    warehouse_path: Path,
    upstreams: tuple[FakeGitHub, FakeForem, NodeLake],
) -> None:
    github, _, lake = upstreams
    sha = github.push(REPO_NAME, DAY1)
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, {"README.md": "markdown"}))
    lake.before_mutation({"delete": {"id": "homepage"}})
    code, report = refresh(manifest, warehouse_path)
    assert code == 4
    assert report["push"]["status"] == "guard-tripped"
    assert report["run"]["status"] == "ok"
    runs = json.loads(cli("runs", "--warehouse", warehouse_path, "--json").stdout)
    assert runs[0]["command"] == "refresh" and runs[0]["status"] == "ok"


def test_a_failed_entry_exits_1_but_publishes_the_rest(
    tmp_path: Path,
    warehouse_path: Path,
    upstreams: tuple[FakeGitHub, FakeForem, NodeLake],
) -> None:
    github, _, lake = upstreams
    sha = github.push(REPO_NAME, DAY1)
    text = manifest_toml(REPO_NAME, sha, {"README.md": "markdown"}) + forem_entry(
        id=404404, reads_per_second=1000
    )
    manifest = write_manifest(tmp_path, text)
    code, report = refresh(manifest, warehouse_path)
    assert code == 1
    assert [f["source"] for f in report["run"]["failures"]] == ["forem"]
    assert report["push"]["status"] == "ok" and report["push"]["plan"]["create"] == 1
    assert len(ours(lake, "sourceDocument")) == 1


def test_refresh_publishes_to_ndjson_by_default(tmp_path: Path, warehouse_path: Path) -> None:
    manifest = write_manifest(
        tmp_path,
        '[corpus]\nname = "synth"\nnamespace = "synth"\n[[synthetic]]\nname = "a"\ncount = 3\n',
    )
    out = tmp_path / "synth.ndjson"
    code, report = refresh(manifest, warehouse_path, "--out", str(out))
    assert code == 0
    assert report["push"]["target"] == f"ndjson:{out}"
    assert len(out.read_text().splitlines()) == 3
    code, again = refresh(manifest, warehouse_path, "--out", str(out))
    assert code == 0 and again["push"]["applied"] == 0
    assert again["target_drift"]["written"] == [] and again["target_drift"]["deleted"] == []


def test_refresh_with_a_half_configured_sanity_exits_2_before_ingesting(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = write_manifest(
        tmp_path,
        '[corpus]\nname = "synth"\nnamespace = "synth"\n[[synthetic]]\nname = "a"\ncount = 3\n',
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SANITY_PROJECT_ID", "proj")
    monkeypatch.setenv("SANITY_TOKEN", "sk-half-configured-token-0123456789")
    result = cli("refresh", manifest, "--warehouse", warehouse_path)
    assert result.exit_code == 2, result.output
    assert "SANITY_DATASET" in result.stderr and "half configured" in result.stderr
    assert not (tmp_path / "out").exists()
    out = tmp_path / "synth.ndjson"
    code, report = refresh(manifest, warehouse_path, "--target", f"ndjson:{out}")
    assert code == 0 and report["push"]["target"] == f"ndjson:{out}"


def test_classify_is_pure_and_explains_each_case() -> None:
    body = {"_id": "ns.a", "_rev": "tx1", "_type": "t", "title": "x"}
    edited, written, deleted, drafts = classify(
        {"ns.a": body}, frozenset({"tx9"}), ["ns.a", "ns.b"], ["ns.a"]
    )
    assert (edited, written, deleted, drafts) == ([], ["ns.a"], ["ns.b"], ["ns.a"])
