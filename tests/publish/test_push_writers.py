"""Writes the push itself causes (issue 48, point 6): a Sanity Function reacting to our
mutations writes with its own robot token, in transactions of its own
(https://www.sanity.io/docs/functions/functions-js-client ,
https://www.sanity.io/docs/functions/robot-tokens-with-functions), so the documents it
writes carry its transaction id as ``_rev``, and the History API's transaction log names
the transaction's ``author`` (shared/reference/upstream-apis.md §1.8, §1.9). The receipt
names what was written and by whom; the guard is as strict as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.node_lake import NodeLake
from pipelines.publish.writers import Write, authors, describe, guard_writers, writes
from tests.conftest import cli
from tests.publish_corpus import manifest_text, register

ROBOT = "pFunctionRobot42"


def _corpus(tmp_path: Path, warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    register(monkeypatch)
    path = tmp_path / "atlas.toml"
    path.write_text(manifest_text(synthetic=5))
    assert cli("ingest", path, "--warehouse", warehouse).exit_code == 0
    return path


def test_a_function_writing_back_into_our_document_is_named_in_the_receipt(
    node_lake: NodeLake, tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Function patches a document we just created: the push is ok (our namespace,
    nothing unrelated moved), and the receipt says which document its robot wrote, in
    which transaction."""
    path = _corpus(tmp_path, warehouse_path, monkeypatch)
    node_lake.put({"_id": "homepage", "_type": "page"})
    plan = json.loads(
        cli("publish", path, "--warehouse", warehouse_path, "--dry-run", "--json").stdout
    )
    target_id = sorted(plan["create"])[0]
    node_lake.function_reacts({"patch": {"id": target_id, "set": {"aiSummary": "x"}}}, author=ROBOT)

    result = cli("publish", path, "--warehouse", warehouse_path, "--json")
    assert result.exit_code == 0, result.output
    receipt = json.loads(result.stdout)["receipt"]
    rev = node_lake.documents[target_id]["_rev"]
    assert rev not in json.loads(result.stdout)["transaction_ids"]
    assert receipt["written_by_others"] == [
        {"id": target_id, "transaction": rev, "author": ROBOT, "ours": True}
    ]
    assert receipt["written_by_others_count"] == 1
    assert receipt["unrelated_before"] == receipt["unrelated_after"] == 1

    node_lake.function_reacts({"patch": {"id": target_id, "set": {"aiSummary": "y"}}}, author=ROBOT)
    text = cli("publish", path, "--warehouse", warehouse_path)  # nothing to send: no reaction
    assert "written during the push by others" not in text.output


def test_a_function_writing_outside_the_namespace_trips_the_guard_and_is_named(
    node_lake: NodeLake, tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Function creates an audit document outside the namespace: the unrelated count
    moves, the guard trips (exit 4) as before, and its message and the receipt name the
    robot that wrote it."""
    path = _corpus(tmp_path, warehouse_path, monkeypatch)
    node_lake.function_reacts({"create": {"_id": "audit.1", "_type": "audit"}}, author=ROBOT)

    result = cli("publish", path, "--warehouse", warehouse_path)
    assert result.exit_code == 4, result.output
    assert "GUARD TRIPPED" in result.stderr
    assert f"audit.1 by {ROBOT}" in result.stderr
    assert f"1 document(s) written during the push by others: audit.1 by {ROBOT}" in result.stdout


def test_a_function_editing_an_unrelated_document_is_named_not_counted(
    node_lake: NodeLake, tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A patch to an existing unrelated document moves no count and carries none of our
    transaction ids, so the guard stays as it is today (another writer's edit is
    information); the receipt names the document and its writer, marked not ours."""
    path = _corpus(tmp_path, warehouse_path, monkeypatch)
    node_lake.put({"_id": "homepage", "_type": "page"})
    node_lake.function_reacts({"patch": {"id": "homepage", "set": {"n": 1}}}, author=ROBOT)
    result = cli("publish", path, "--warehouse", warehouse_path, "--json")
    assert result.exit_code == 0, result.output
    receipt = json.loads(result.stdout)["receipt"]
    assert receipt["written_by_others"] == [
        {
            "id": "homepage",
            "transaction": node_lake.documents["homepage"]["_rev"],
            "author": ROBOT,
            "ours": False,
        }
    ]


def test_a_writer_the_transaction_log_does_not_name_is_said_so() -> None:
    found = writes(
        [{"_id": "b.1", "_rev": "t2"}, {"_id": "a.1", "_rev": "t1"}],
        authors([{"id": "t1", "author": "pRobot"}, {"id": "t9"}]),
        lambda i: i.startswith("a."),
    )
    assert found == [Write("a.1", "t1", "pRobot", True), Write("b.1", "t2", None, False)]
    assert "b.1 by a writer Sanity's transaction log did not name" in describe(found)
    assert guard_writers(found) == (
        "written during the push by: b.1 by a writer Sanity's transaction log did not name "
        "(transaction t2)"
    )
    assert describe(found[:1], 30).endswith("… and 29 more")
