"""Freed memory goes back to the system during a bulk run (pipelines/backfill/memory.py)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pipelines.backfill.memory import (
    _TRIM,
    arrow_memory_returned,
    arrow_pages_kept,
    return_freed_memory,
)


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


@pytest.mark.skipif(_TRIM is None, reason="the C library has no malloc_trim")
def test_freed_chunks_held_by_the_allocator_are_returned() -> None:
    # 200 MB in chunks below the allocator's mmap threshold, then one chunk above them, so
    # freeing the 200 MB leaves a hole the allocator keeps rather than trims.
    chunks = [b"x" * 100_000 for _ in range(2_000)]
    pinned = b"y" * 100_000
    del chunks
    held = _rss_mb()
    assert return_freed_memory()
    assert held - _rss_mb() > 100, "the freed chunks stayed resident"
    assert pinned


def test_arrow_allocates_from_a_pool_that_returns_pages_only_inside_the_block() -> None:
    before = pa.default_memory_pool().backend_name
    with arrow_memory_returned():
        inside = pa.default_memory_pool().backend_name
        array = pa.array([b"z" * 1000] * 1000)
        assert pa.default_memory_pool().bytes_allocated() >= array.nbytes
    assert pa.default_memory_pool().backend_name == before
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        assert inside == before
    else:
        assert inside == "jemalloc"


def test_without_jemalloc_the_default_pool_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable() -> pa.MemoryPool:
        raise NotImplementedError("built without jemalloc")

    monkeypatch.setattr(pa, "jemalloc_memory_pool", unavailable)
    before = pa.default_memory_pool().backend_name
    with pytest.raises(KeyError) as raised, arrow_memory_returned():
        assert pa.default_memory_pool().backend_name == before
        raise KeyError("the body's own error")
    assert raised.value.__context__ is None  # not reported as raised while handling another


def test_arrow_keeps_freed_pages_only_inside_the_block(monkeypatch: pytest.MonkeyPatch) -> None:
    decays: list[int] = []
    monkeypatch.setattr(pa, "jemalloc_set_decay_ms", decays.append)
    with pytest.raises(KeyError), arrow_pages_kept(250):
        assert decays == [250]
        raise KeyError("the body's own error")
    assert decays == [250, 0]  # returned at once again, after a failure too


def test_without_jemalloc_freed_pages_are_left_to_the_default_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unavailable(ms: int) -> None:
        raise NotImplementedError("built without jemalloc")

    monkeypatch.setattr(pa, "jemalloc_set_decay_ms", unavailable)
    with pytest.raises(KeyError) as raised, arrow_pages_kept():
        raise KeyError("the body's own error")
    assert raised.value.__context__ is None  # not reported as raised while handling another
