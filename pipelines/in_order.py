"""Calls run one at a time, in the order given, in a thread beside the caller's work.

A backfill commits each range of documents while it builds the next block: the commit
(DuckDB, on the warehouse's connection) and the build (DuckDB on a connection of its own,
and Python) release the GIL for most of their time, so both cores stay busy.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from types import TracebackType


class InOrder:
    """Runs submitted calls in a thread, in order, at most ``ahead`` of them unfinished at a
    time: :meth:`submit` waits beyond that, so the work handed over (and the memory it holds)
    stays bounded.

    A call that raises stops the rest: the calls after it are skipped (each may depend on the
    ones before, as a checkpoint does), and the error is raised to the caller by the next
    :meth:`submit` or by :meth:`finish`. Leaving the ``with`` block waits for the thread."""

    def __init__(self, name: str, ahead: int = 1) -> None:
        if ahead < 1:
            raise ValueError("ahead must be at least 1")
        self._calls: queue.SimpleQueue[Callable[[], object] | None] = queue.SimpleQueue()
        self._room = threading.Semaphore(ahead)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (call := self._calls.get()) is not None:
            try:
                if self._error is None:  # else skipped: an earlier call failed
                    call()
            except BaseException as exc:  # raised to the caller, in its thread
                self._error = exc
            finally:
                self._room.release()

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def submit(self, call: Callable[[], object]) -> None:
        self._raise()
        self._room.acquire()
        self._raise()
        self._calls.put(call)

    def _stop(self) -> None:
        if self._thread.is_alive():
            self._calls.put(None)
            self._thread.join()

    def finish(self) -> None:
        """Wait for every submitted call; raise the error of one that failed."""
        self._stop()
        self._raise()

    def __enter__(self) -> InOrder:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if error is None:
            self.finish()
        else:
            self._stop()  # the caller's error wins; the calls it submitted still end
