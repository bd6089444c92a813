"""Progress on long work, one system for every driver.

A driver reports events through a small interface of its own (:class:`Reporter` for an
ingest, :class:`BackfillReporter` for a backfill, a :class:`Steps` callback for counted work
such as ``verify`` or ``publish``); all render through one :class:`Display`:
a live bar per step on a terminal (:class:`LiveDisplay`), a throttled plain line per step
otherwise (:class:`LineDisplay`, for logs and cron mail; with ``--log-format json`` also on
a terminal, each line one JSON object with its counts), or nothing (``--json``, tests).
Every line goes out through :mod:`pipelines.logline`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Any, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from pipelines import logline
from warehouse import timestamps
from warehouse.ingest import Counts

Fields = Mapping[str, Any] | None


# -- displays ------------------------------------------------------------------------------
class Display:
    """Where progress goes. The base class shows nothing."""

    def step(self, name: str, total: float | None = None) -> None:
        """A new step begins (``total`` in whatever unit ``advance`` counts, if known)."""

    def advance(
        self, done: float, total: float | None, rows: int, text: str, fields: Fields = None
    ) -> None:
        """The current step reached ``done`` of ``total``; ``text`` says it in words,
        ``fields`` in a structured line's keys."""

    def say(self, line: str, fields: Fields = None) -> None:
        """A line that stays (a finished step, a failure)."""

    def close(self) -> None:
        pass


def eta(done: float, total: float | None, elapsed: float) -> str:
    if not total or done <= 0 or done >= total:
        return "-"
    return timestamps.duration(elapsed * (total - done) / done) or "-"


class LineDisplay(Display):
    """Plain lines: ``advance`` at most every ``interval`` seconds (never when None), ``say``
    always."""

    def __init__(self, stream: TextIO, interval: float | None = None, prefix: str = "") -> None:
        self.stream = stream
        self.interval = interval
        self.prefix = prefix
        self._step_started = time.monotonic()
        self._last = 0.0

    def step(self, name: str, total: float | None = None) -> None:
        # The first line of a step comes ``interval`` seconds into it: a short step says
        # only how it ended.
        self._step_started = self._last = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self._step_started

    def advance(
        self, done: float, total: float | None, rows: int, text: str, fields: Fields = None
    ) -> None:
        if self.interval is None:
            return
        moment = time.monotonic()
        if moment - self._last < self.interval:
            return
        self._last = moment
        self.say(text, {"event": "progress", **(fields or {})})

    def say(self, line: str, fields: Fields = None) -> None:
        fields = dict(fields or {})
        event = fields.pop("event", "progress")
        level = fields.pop("level", "info")
        logline.emit(f"{self.prefix}{line}", event=event, level=level, stream=self.stream, **fields)


class LiveDisplay(Display):
    """A progress bar per step, with rows/s, elapsed time and ETA, on a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rows]:>12,} rows  {task.fields[rate]:>9,.0f} rows/s"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(file=stream),
            transient=False,
        )
        self.progress.start()
        self._task: TaskID | None = None
        self._started = time.monotonic()

    def step(self, name: str, total: float | None = None) -> None:
        if self._task is not None:
            task = self.progress.tasks[self._task]
            self.progress.update(self._task, completed=task.total or task.completed)
        self._started = time.monotonic()
        self._task = self.progress.add_task(name, total=total or None, rows=0, rate=0.0)

    def advance(
        self, done: float, total: float | None, rows: int, text: str, fields: Fields = None
    ) -> None:
        if self._task is None:
            self.step("working")
        assert self._task is not None
        rate = rows / max(time.monotonic() - self._started, 1e-6)
        self.progress.update(self._task, completed=done, total=total or None, rows=rows, rate=rate)

    def say(self, line: str, fields: Fields = None) -> None:
        self.progress.console.print(line, markup=False, highlight=False)

    def close(self) -> None:
        self.progress.stop()


def display_for(
    stream: TextIO | None = None,
    *,
    quiet: bool = False,
    interval: float | None = None,
    prefix: str = "",
) -> Display:
    """The display for a stream: nothing when quiet, a live bar on a terminal (unless the log
    format is json), else lines."""
    stream = stream or sys.stderr
    if quiet:
        return Display()
    if stream.isatty() and not logline.is_json():
        return LiveDisplay(stream)
    return LineDisplay(stream, interval, prefix)


# -- steps -----------------------------------------------------------------------------------
class Steps:
    """Progress of work made of counted steps (``verify``'s snapshots, ``publish``'s
    mutations, pinned files re-downloaded), shown on a :class:`Display`.

    A library function takes it as a plain callback, ``progress(step, done, total,
    detail)``: a new ``step`` name starts a step (the previous one says how it ended),
    ``done`` of ``total`` moves it on. :meth:`close` ends the last step."""

    def __init__(self, display: Display | None = None, prefix: str = "") -> None:
        self.display = display or Display()
        self.prefix = prefix
        self._step: str | None = None
        self._line = ""
        self._fields: dict[str, Any] = {}
        self._started = time.monotonic()

    def __call__(self, step: str, done: int, total: int | None = None, detail: str = "") -> None:
        if step != self._step:
            self._end()
            self._step = step
            self._started = time.monotonic()
            self.display.step(f"{self.prefix}{step}", total)
        of = f"/{total:,}" if total is not None else ""
        self._line = f"{self.prefix}{step}: {done:,}{of}" + (f" {detail}" if detail else "")
        self._fields = {"step": f"{self.prefix}{step}", "done": done, "total": total}
        self.display.advance(done, total, done, self._line, self._fields)

    def _end(self) -> None:
        if self._step is not None:
            seconds = time.monotonic() - self._started
            self.display.say(
                f"{self._line} in {seconds:.1f}s",
                {"event": "step.finished", **self._fields, "seconds": round(seconds, 3)},
            )
        self._step = None

    def close(self) -> None:
        self._end()
        self.display.close()


def steps_for(
    prefix: str, *, quiet: bool = False, stream: TextIO | None = None, interval: float = 2.0
) -> Steps:
    """Steps for a command: a live bar on a terminal, a plain line every ``interval``
    seconds (and one as each step ends) otherwise, nothing when ``quiet``."""
    return Steps(display_for(stream, quiet=quiet, interval=interval), prefix)


# -- ingest --------------------------------------------------------------------------------
def _summary(total: Counts) -> str:
    return (
        f"{total.records:,} records: {total.new:,} new, {total.changed:,} changed, "
        f"{total.unchanged:,} unchanged, {total.gone:,} gone, {total.restored:,} restored"
    )


class Reporter:
    """The events of an ingest run, shown on a :class:`Display` (by default, nothing)."""

    def __init__(self, display: Display | None = None) -> None:
        self.display = display or Display()

    def run_started(self, run_id: int, corpus: str) -> None:
        """The run's id and corpus, carried by every later structured line (a retry too)."""
        logline.bind(run_id=run_id, corpus=corpus)

    def entry_started(self, source: str, label: str) -> None:
        logline.bind(source=source, entry=label)
        self.display.step(f"{source}: {label}")

    def batch_committed(self, source: str, label: str, total: Counts) -> None:
        self.display.advance(
            total.records,
            None,
            total.records,
            f"{source}: {label}: {_summary(total)}",
            {
                "source": source,
                "entry": label,
                "counts": {"records": total.records, **total.as_dict()},
            },
        )

    def entry_finished(self, source: str, label: str, total: Counts, error: str | None) -> None:
        status = f"FAILED: {error}" if error else _summary(total)
        fields = {
            "event": "entry.failed" if error else "entry.finished",
            "level": "error" if error else "info",
            "source": source,
            "entry": label,
            "counts": {"records": total.records, **total.as_dict()},
        }
        self.display.say(f"{source}: {label}: {status}", fields)
        logline.bind(source=None, entry=None)

    def close(self) -> None:
        self.display.close()


def reporter_for(stream: TextIO | None = None, *, quiet: bool = False) -> Reporter:
    return Reporter(display_for(stream, quiet=quiet))


# -- backfill ------------------------------------------------------------------------------
class BackfillReporter:
    """The events of a backfill, shown on a :class:`Display` (by default, nothing)."""

    def __init__(self, display: Display | None = None) -> None:
        self.display = display or Display()
        self._started = time.monotonic()

    def _elapsed(self) -> float:
        return time.monotonic() - self._started

    def reading(self, rows: int, bytes_read: int, total_bytes: int) -> None:
        elapsed = self._elapsed()
        self.display.advance(
            bytes_read,
            total_bytes,
            rows,
            f"read {rows:,} rows ({rows / max(elapsed, 1e-6):,.0f} rows/s, "
            f"ETA {eta(bytes_read, total_bytes, elapsed)})",
            {"step": "reading", "done": bytes_read, "total": total_bytes, "counts": {"rows": rows}},
        )

    def read_finished(self, rows: int, matched: int, malformed: int) -> None:
        seconds = self._elapsed()
        self.display.say(
            f"read {rows:,} rows in {seconds:.1f}s: {matched:,} kept, {malformed:,} malformed",
            {
                "event": "step.finished",
                "step": "reading",
                "seconds": round(seconds, 3),
                "counts": {"rows": rows, "kept": matched, "malformed": malformed},
            },
        )
        self._started = time.monotonic()
        self.display.step("writing", matched)

    def writing(self, rows_done: int, rows_total: int, documents: int) -> None:
        elapsed = self._elapsed()
        self.display.advance(
            rows_done,
            rows_total,
            rows_done,
            f"committed {rows_done:,}/{rows_total:,} rows as {documents:,} documents "
            f"({rows_done / max(elapsed, 1e-6):,.0f} rows/s, "
            f"ETA {eta(rows_done, rows_total, elapsed)})",
            {
                "step": "writing",
                "done": rows_done,
                "total": rows_total,
                "counts": {"rows": rows_done, "documents": documents},
            },
        )

    def close(self) -> None:
        self.display.close()


def backfill_reporter_for(
    as_json: bool, interval: float, stream: TextIO | None = None
) -> BackfillReporter:
    display = display_for(stream, quiet=as_json, interval=interval, prefix="backfill nhtsa: ")
    display.step("reading")
    return BackfillReporter(display)
