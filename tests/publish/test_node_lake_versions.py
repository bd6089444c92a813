"""The Content Lake fake serves Content Release versions and release documents as Sanity
documents them: ``raw`` returns ``versions.*`` only from API version 2025-02-19 ("versions.**
documents are not returned in API versions prior to 2025-02-19"); from that version the
default perspective is ``published``, which leaves out drafts, versions and release
documents; a stack of release names lays their versions over the published documents, and
older API versions refuse one with 400 "Complex perspectives are not supported for this
version" [DOC https://www.sanity.io/changelog/676aaa9d-2da6-44fb-abe5-580f28047c10,
https://www.sanity.io/docs/apis-and-sdks/content-releases-cheat-sheet]. GROQ's ``now()`` is
the lake's own clock, the one ``_updatedAt`` is stamped with."""

from __future__ import annotations

from typing import Any

import httpx

from fakes.node_lake import NodeLake
from fakes.sanity import FakeContentLake


def _query(
    lake: NodeLake, query: str, version: str = "2025-02-19", perspective: str | None = None
) -> httpx.Response:
    params = {"query": query, **({"perspective": perspective} if perspective else {})}
    return httpx.get(
        f"{lake.url}/v{version}/data/query/{lake.dataset}",
        params=params,
        headers={"Authorization": f"Bearer {lake.token}"},
    )


def _ids(lake: NodeLake, **options: Any) -> list[str]:
    response = _query(lake, "*[] | order(_id)._id", **options)
    assert response.status_code == 200, response.text
    return list(response.json()["result"])


def _fill(lake: NodeLake) -> None:
    lake.put({"_id": "ns.a", "_type": "t", "n": 1})
    lake.put({"_id": "ns.b", "_type": "t", "n": 1})
    lake.put({"_id": "drafts.ns.a", "_type": "t", "n": 2})
    lake.put({"_id": "versions.rA.ns.a", "_type": "t", "n": 3})
    lake.put({"_id": "versions.rA.ns.b", "_type": "t", "_system": {"delete": True}})
    lake.put({"_id": "_.releases.rA", "_type": "system.release", "state": "active"})


def test_raw_returns_versions_only_from_2025_02_19(node_lake: NodeLake) -> None:
    _fill(node_lake)
    everything = ["_.releases.rA", "drafts.ns.a", "ns.a", "ns.b"]
    versions = ["versions.rA.ns.a", "versions.rA.ns.b"]
    assert _ids(node_lake, perspective="raw") == sorted(everything + versions)
    assert _ids(node_lake, perspective="raw", version="2024-12-01") == everything
    assert _ids(node_lake, version="2021-03-25") == everything  # raw was the default


def test_published_is_the_default_and_leaves_out_drafts_versions_and_releases(
    node_lake: NodeLake,
) -> None:
    _fill(node_lake)
    assert _ids(node_lake) == ["ns.a", "ns.b"]
    assert _ids(node_lake, perspective="published") == ["ns.a", "ns.b"]


def test_a_release_stack_lays_its_versions_over_published_and_old_versions_refuse_it(
    node_lake: NodeLake,
) -> None:
    _fill(node_lake)
    response = _query(node_lake, "*[] | order(_id){_id, n, _originalId}", perspective="rA")
    assert response.json()["result"] == [
        {"_id": "ns.a", "n": 3, "_originalId": "versions.rA.ns.a"}  # ns.b is unpublished
    ]
    drafts = _query(node_lake, "*[_id == 'ns.a'][0].n", perspective="drafts,rA")
    assert drafts.json()["result"] == 2  # the first named is on top
    old = _query(node_lake, "*[]", version="2024-12-01", perspective="rA")
    assert old.status_code == 400
    assert old.json()["message"] == "Complex perspectives are not supported for this version"


def test_now_is_the_lakes_clock_between_writes(node_lake: NodeLake) -> None:
    node_lake.put({"_id": "before", "_type": "t"})
    now = _query(node_lake, "now()", perspective="raw").json()["result"]
    node_lake.put({"_id": "after", "_type": "t"})
    later = _query(
        node_lake,
        "*[dateTime(_updatedAt) >= dateTime($since)]._id".replace("$since", f'"{now}"'),
        perspective="raw",
    ).json()["result"]
    assert later == ["after"]


def test_the_python_fake_hides_versions_before_2025_02_19(node_lake_server: NodeLake) -> None:
    fake = FakeContentLake(groq=node_lake_server)
    fake.put({"_id": "ns.a", "_type": "t"})
    fake.put({"_id": "versions.rA.ns.a", "_type": "t"})
    fake.put({"_id": "_.releases.rA", "_type": "system.release"})
    headers = {"Authorization": f"Bearer {fake.token}"}
    with fake.serve():

        def ids(version: str, perspective: str) -> Any:
            url = f"{fake.host}/v{version}/data/query/{fake.dataset}?perspective={perspective}"
            body = {"query": "*[] | order(_id)._id"}
            return httpx.post(url, json=body, headers=headers).json()["result"]

        assert ids("2025-02-19", "raw") == ["_.releases.rA", "ns.a", "versions.rA.ns.a"]
        assert ids("2024-12-01", "raw") == ["_.releases.rA", "ns.a"]
        assert ids("2025-02-19", "published") == ["ns.a"]
