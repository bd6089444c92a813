"""Progress on long work: live on a terminal, one quiet line per step otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.text import Text

from warehouse.ingest import Counts


class Reporter:
    """Receives progress events; the base class prints nothing (``--json``, tests)."""

    def entry_started(self, source: str, label: str) -> None:
        pass

    def batch_committed(self, source: str, label: str, total: Counts) -> None:
        pass

    def entry_finished(self, source: str, label: str, total: Counts, error: str | None) -> None:
        pass

    def close(self) -> None:
        pass


def _summary(total: Counts) -> str:
    return (
        f"{total.records} records: {total.new} new, {total.changed} changed, "
        f"{total.unchanged} unchanged, {total.gone} gone, {total.restored} restored"
    )


class LineReporter(Reporter):
    """One line per finished entry: for logs and cron mail."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr

    def entry_finished(self, source: str, label: str, total: Counts, error: str | None) -> None:
        status = f"FAILED: {error}" if error else _summary(total)
        print(f"{source}: {label}: {status}", file=self.stream, flush=True)


class LiveReporter(LineReporter):
    """A live line per entry with counts and records/s, on a terminal."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__(stream)
        self.console = Console(file=self.stream)
        self._live: Live | None = None
        self._started = 0.0

    def entry_started(self, source: str, label: str) -> None:
        self._started = time.monotonic()
        self._live = Live(
            Text(f"{source}: {label}: fetching…"), console=self.console, transient=True
        )
        self._live.start()

    def batch_committed(self, source: str, label: str, total: Counts) -> None:
        if self._live is None:
            return
        rate = total.records / max(time.monotonic() - self._started, 1e-6)
        self._live.update(Text(f"{source}: {label}: {_summary(total)} ({rate:,.0f}/s)"))

    def entry_finished(self, source: str, label: str, total: Counts, error: str | None) -> None:
        self.close()
        super().entry_finished(source, label, total, error)

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None


def reporter_for(stream: TextIO | None = None, *, quiet: bool = False) -> Reporter:
    stream = stream or sys.stderr
    if quiet:
        return Reporter()
    return LiveReporter(stream) if stream.isatty() else LineReporter(stream)
