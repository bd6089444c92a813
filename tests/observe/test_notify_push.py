"""Notifications about the push, against the Content Lake fake (groq-js): the guard
tripped, a push whose outcome is unknown; and a Slack-shaped post.

Apprise's ``slack://`` plugin only posts to hooks.slack.com (``webhook_url`` in apprise's
``plugins/slack.py``), so a Slack-format post to a local receiver is Apprise's ``json://``
with its payload remapped (``?:message=text`` renames the field, an empty ``:title=``
drops one: ``payload_extras`` in ``plugins/custom_json.py``): the body Slack's incoming
webhooks take, ``{"text": ...}`` (https://api.slack.com/messaging/webhooks)."""

from __future__ import annotations

import json
from pathlib import Path

from fakes.node_lake import NodeLake
from tests.conftest import cli, write_manifest
from tests.observe.receivers import receiver
from tests.observe.test_notify import synthetic


def refresh(manifest: Path, warehouse: Path, *args: str):  # type: ignore[no-untyped-def]
    return cli("refresh", manifest, "--warehouse", warehouse, *args)


def test_a_tripped_guard_sends_one_message_and_keeps_exit_4(
    tmp_path: Path, warehouse_path: Path, node_lake: NodeLake
) -> None:
    node_lake.put({"_id": "homepage", "_type": "page", "title": "Someone else's"})
    manifest = write_manifest(tmp_path, synthetic(2))
    node_lake.before_mutation({"delete": {"id": "homepage"}})
    with receiver() as hook:
        result = refresh(manifest, warehouse_path, "--notify", hook.url("json"), "--json")
    assert result.exit_code == 4, result.output
    assert json.loads(result.stdout)["push"]["status"] == "guard-tripped"
    [post] = hook.bodies
    assert (
        post["title"] == "receipts refresh s: the unrelated-document guard tripped, the run failed"
    )
    lines = post["message"].splitlines()
    assert lines[1].startswith("GUARD TRIPPED: push 1 to sanity:")
    assert lines[2] == "  unrelated documents before 1, after 0, touched by us 0"


def test_a_push_whose_outcome_is_unknown_sends_one_message(
    tmp_path: Path, warehouse_path: Path, node_lake: NodeLake
) -> None:
    """The transaction commits and its answer is lost; reading it back fails too (as
    tests/publish/test_node_lake.py does it): the push cannot tell."""
    manifest = write_manifest(tmp_path, synthetic(2))
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0
    node_lake.fault("mutate", when="after", drop=True)
    node_lake.fault("doc", status=400, times=100)
    with receiver() as hook:
        args = ("--notify", hook.url("json"), "--notify-on", "push-unknown")
        result = cli("publish", manifest, "--warehouse", warehouse_path, *args)
    assert result.exit_code == 1 and "whether it committed is unknown" in result.stderr
    [post] = hook.bodies
    assert post["title"] == "receipts publish s: a push's outcome is unknown"
    assert "PUSH OUTCOME UNKNOWN: push 1 to sanity:" in post["message"]
    assert "1 transaction(s) may or may not have committed" in post["message"]


def test_a_slack_shaped_post_carries_the_summary_as_text(
    tmp_path: Path, warehouse_path: Path, node_lake: NodeLake
) -> None:
    manifest = write_manifest(tmp_path, synthetic(2))
    assert refresh(manifest, warehouse_path).exit_code == 0
    write_manifest(tmp_path, synthetic(2, changed=100.0))
    with receiver() as hook:
        slack = hook.url("json", "services/T000/B000") + (
            "?:message=text&:title=&:version=&:attachments=&:type="
        )
        result = refresh(manifest, warehouse_path, "--notify", slack)
    assert result.exit_code == 0, result.output
    [post] = hook.posts
    assert post["path"] == "/services/T000/B000"
    assert list(post["json"]) == ["text"]
    assert post["json"]["text"].startswith("refresh s: ok (run 2, ")
    assert "drift found: 2 document(s)" in post["json"]["text"]
