"""Producing the next items of an iterator in a thread while the caller works on this one."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

_DONE = object()


def ahead(items: Iterable[T], depth: int = 1) -> Iterator[T]:
    """``items``, produced up to ``depth`` ahead by a thread. Worth it when producing holds
    the GIL (Python parsing) and consuming releases it (DuckDB, zlib, hashing large
    buffers): on two cores the two overlap. An exception in the producer is raised in the
    caller; a caller that stops early stops the producer."""
    ready: queue.Queue[object] = queue.Queue(depth)
    stop = threading.Event()
    iterator = iter(items)

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in iterator:
                if not put(item):
                    return
            put(_DONE)
        except BaseException as exc:  # raised again in the consumer
            put(exc)

    thread = threading.Thread(target=produce, name="ahead", daemon=True)
    thread.start()
    try:
        while (item := ready.get()) is not _DONE:
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        thread.join()
        close = getattr(iterator, "close", None)
        if close is not None:
            close()
