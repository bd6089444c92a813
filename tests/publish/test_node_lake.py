"""The Content Lake fake whose every query groq-js evaluates: its semantics, and a publish,
a re-publish, a prune and target drift through the CLI against it; the Python fake asking
groq-js too."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from fakes.node_lake import NodeLake
from fakes.sanity import FakeContentLake
from tests.conftest import cli
from tests.publish_corpus import manifest_text, register


def _mutate(lake: NodeLake, mutations: list[dict[str, object]], tx: str) -> httpx.Response:
    return httpx.post(
        f"{lake.url}/v2025-02-19/data/mutate/{lake.dataset}?returnIds=true",
        json={"mutations": mutations, "transactionId": tx},
        headers={"Authorization": f"Bearer {lake.token}"},
    )


def _query(lake: NodeLake, query: str, perspective: str | None = None) -> object:
    params = {"query": query, **({"perspective": perspective} if perspective else {})}
    response = httpx.get(
        f"{lake.url}/v2025-02-19/data/query/{lake.dataset}",
        params=params,
        headers={"Authorization": f"Bearer {lake.token}"},
    )
    response.raise_for_status()
    return response.json()["result"]


def test_rev_is_the_transaction_id_and_a_transaction_id_is_never_accepted_twice(
    node_lake: NodeLake,
) -> None:
    first = _mutate(node_lake, [{"create": {"_id": "ns.a", "_type": "t"}}], "tx-1")
    assert first.status_code == 200
    assert node_lake.documents["ns.a"]["_rev"] == "tx-1"
    again = _mutate(node_lake, [{"createIfNotExists": {"_id": "ns.b", "_type": "t"}}], "tx-1")
    assert again.status_code == 409
    assert "ns.b" not in node_lake.documents
    stale = _mutate(
        node_lake, [{"patch": {"id": "ns.a", "ifRevisionID": "tx-0", "set": {"x": 1}}}], "tx-2"
    )
    assert stale.status_code == 409
    item = stale.json()["error"]["items"][0]["error"]
    assert item["type"] == "documentRevisionIDDoesNotMatchError"


def test_queries_are_groq_js_with_perspectives(node_lake: NodeLake) -> None:
    node_lake.put({"_id": "ns.a", "_type": "t", "n": 2})
    node_lake.put({"_id": "drafts.ns.a", "_type": "t", "n": 3})
    node_lake.put({"_id": "nsX.keep", "_type": "t", "n": 5})
    assert _query(node_lake, 'count(*[string::startsWith(_id, "ns.")])', "raw") == 1
    assert _query(node_lake, "count(*)", "raw") == 3
    assert _query(node_lake, "count(*)") == 2  # published by default: no drafts
    assert _query(node_lake, "*[_id == 'ns.a'][0].n", "drafts") == 3
    # groq-js path() quirk: the dot is unescaped, so nsX.keep matches "ns.**" as well as ns.a
    assert _query(node_lake, 'count(*[_id in path("ns.**")])', "raw") == 2


def test_a_commit_whose_answer_is_lost_is_still_committed(node_lake: NodeLake) -> None:
    node_lake.fault("mutate", when="after", drop=True)
    with pytest.raises(httpx.HTTPError):
        _mutate(node_lake, [{"create": {"_id": "ns.a", "_type": "t"}}], "tx-1")
    assert node_lake.documents["ns.a"]["_rev"] == "tx-1"
    node_lake.fault("mutate", when="after", status=503)
    assert (
        _mutate(node_lake, [{"create": {"_id": "ns.b", "_type": "t"}}], "tx-2").status_code == 503
    )
    assert "ns.b" in node_lake.documents


def test_publish_and_drift_through_the_cli_against_groq_js(
    node_lake: NodeLake, tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(monkeypatch)
    node_lake.put({"_id": "homepage", "_type": "page", "title": "Someone else's"})
    node_lake.put({"_id": "atlasX.keep", "_type": "page"})
    path = tmp_path / "atlas.toml"
    path.write_text(manifest_text(synthetic=5))
    assert cli("ingest", path, "--warehouse", warehouse_path).exit_code == 0

    first = cli("publish", path, "--warehouse", warehouse_path, "--json")
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    assert report["receipt"]["unrelated_before"] == report["receipt"]["unrelated_after"] == 2
    ours = {k: v for k, v in node_lake.documents.items() if k.startswith("atlas.")}
    assert len(ours) == report["plan"]["create"] > 0
    assert {d["_rev"] for d in ours.values()} <= set(report["transaction_ids"])

    sent = node_lake.mutations_sent()
    second = cli("publish", path, "--warehouse", warehouse_path, "--json")
    assert second.exit_code == 0, second.output
    assert node_lake.mutations_sent() == sent  # an unchanged corpus sends nothing

    some_id = sorted(ours)[0]
    node_lake.edit(some_id, title="edited in the Studio")
    drift = cli("drift", path, "--warehouse", warehouse_path, "--target", "--json")
    assert drift.exit_code == 0, drift.output
    assert some_id in json.dumps(json.loads(drift.stdout)["target_drift"])
    assert node_lake.documents["homepage"]["title"] == "Someone else's"


def test_drift_text_lists_documents_of_a_transaction_committed_but_never_recorded(
    node_lake: NodeLake, tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(monkeypatch)
    path = tmp_path / "atlas.toml"
    path.write_text(manifest_text())
    assert cli("ingest", path, "--warehouse", warehouse_path).exit_code == 0
    # the first transaction commits and its answer is lost; reading it back fails too, so
    # the push cannot tell and records it as unknown
    node_lake.fault("mutate", when="after", drop=True)
    node_lake.fault("doc", status=400, times=100)
    failed = cli("publish", path, "--warehouse", warehouse_path)
    assert failed.exit_code == 1 and "whether it committed is unknown" in failed.stderr
    node_lake.clear_faults()
    committed = node_lake.transactions[0]
    ours = sorted(i for i, d in node_lake.documents.items() if d["_rev"] == committed)
    assert ours

    text = cli("drift", path, "--warehouse", warehouse_path, "--target")
    assert text.exit_code == 0, text.output
    assert f"unrecorded (ours; the next push records the transaction): {', '.join(ours)}" in (
        text.stdout
    )
    as_json = cli("drift", path, "--warehouse", warehouse_path, "--target", "--json")
    assert json.loads(as_json.stdout)["target_drift"]["unrecorded"] == ours


def test_the_python_fake_asks_groq_js_too(node_lake_server: NodeLake) -> None:
    fake = FakeContentLake(groq=node_lake_server)
    fake.put({"_id": "ns.a", "_type": "t"})
    fake.put({"_id": "nsX.keep", "_type": "t"})
    headers = {"Authorization": f"Bearer {fake.token}"}
    url = f"{fake.host}/v2025-02-19/data/query/{fake.dataset}"
    with fake.serve():
        # groq-js's path() quirk shows the answer comes from groq-js
        quirk = httpx.post(
            url, json={"query": 'count(*[_id in path("ns.**")])'}, headers=headers
        ).json()
        assert quirk["result"] == 2
        exact = httpx.post(
            url,
            json={"query": "count(*[string::startsWith(_id, $p)])", "params": {"p": "ns."}},
            headers=headers,
        ).json()
        assert exact["result"] == 1
        broken = httpx.post(url, json={"query": "*[_id == ]"}, headers=headers)
        assert broken.status_code == 400
        assert broken.json()["error"]["type"] == "queryParseError"
