"""Ctrl-C and SIGTERM while a command runs: an interrupt, not a failure.

While a command runs, SIGINT and SIGTERM raise :class:`~warehouse.interrupt.Interrupted`
in the main thread (a signal the process inherited as ignored, as under ``nohup``, stays
ignored). The run that was going records itself as ``interrupted`` with what it committed;
the command line then prints one line and exits 130 (SIGINT) or 143 (SIGTERM), the codes a
shell gives a process killed by those signals.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from warehouse.interrupt import Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum)


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` inside the block (in the main thread;
    elsewhere Python delivers no signal); the previous handlers come back after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for signum in SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, _raise_interrupted)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def message(stop: Interrupted) -> str:
    """The line an interrupted command ends with: the signal, and what was committed."""
    return f"{stop}: {stop.summary}" if stop.summary else str(stop)
