"""GitHub, dev.to and the Content Lake faked together, as a refresh or a publish meets them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import respx

from tests.fakes.forem import FakeForem
from tests.fakes.github import FakeGitHub
from tests.fakes.sanity import FakeContentLake

Upstreams = tuple[FakeGitHub, FakeForem, FakeContentLake]


@pytest.fixture
def upstreams(monkeypatch: pytest.MonkeyPatch) -> Iterator[Upstreams]:
    """The three fakes mounted on one router, SANITY_* pointing at the lake, which already
    holds one unrelated document (``homepage``) for the guard to count."""
    github, forem, lake = FakeGitHub(), FakeForem(reads_per_second=None), FakeContentLake()
    for name, value in lake.env().items():
        monkeypatch.setenv(name, value)
    lake.put({"_id": "homepage", "_type": "page", "title": "Someone else's"})
    with respx.mock(assert_all_called=False) as router:
        github.mount(router)
        forem.install(router)
        lake.mount(router)
        yield github, forem, lake
