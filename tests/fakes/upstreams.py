"""GitHub, dev.to and the Content Lake faked together, as a refresh or a publish meets them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import respx

from tests.fakes.forem import FakeForem
from tests.fakes.github import FakeGitHub
from tests.fakes.node_lake import NodeLake

Upstreams = tuple[FakeGitHub, FakeForem, NodeLake]


@pytest.fixture
def upstreams(node_lake: NodeLake) -> Iterator[Upstreams]:
    """GitHub and dev.to mounted on one router, and the Content Lake whose queries groq-js
    evaluates (a loopback server the router lets through), SANITY_* pointing at it; it
    already holds one unrelated document (``homepage``) for the guard to count."""
    github, forem = FakeGitHub(), FakeForem(reads_per_second=None)
    node_lake.put({"_id": "homepage", "_type": "page", "title": "Someone else's"})
    with respx.mock(assert_all_called=False) as router:
        github.mount(router)
        forem.install(router)
        router.route(host="127.0.0.1").pass_through()
        yield github, forem, node_lake
