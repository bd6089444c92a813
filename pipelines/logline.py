"""Everything receipts writes on stderr, through one emitter, as text or as JSON lines.

The text format (the default) writes each line exactly as the caller wrote it. The JSON
format (``--log-format json`` or ``RECEIPTS_LOG_FORMAT=json``), for journald, Loki or any log
shipper, writes each line as one JSON object with the keys of :data:`KEYS` always present
(``run_id`` and ``corpus`` are null until a run is known) and, where they apply, the
fields of :data:`OPTIONAL_KEYS`.

The library below the command line never writes on stderr itself: progress comes through
:mod:`pipelines.progress`, retries and lock waits through Python ``logging`` (``sources/http.py``,
``warehouse/lock.py``), which the command line hands to :func:`emit_record`.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

ENV_LOG_FORMAT = "RECEIPTS_LOG_FORMAT"
FORMATS = ("text", "json")
KEYS = ("time", "level", "event", "message", "run_id", "corpus")
OPTIONAL_KEYS = (
    "source",
    "entry",
    "counts",
    "retry",
    "step",
    "done",
    "total",
    "seconds",
    "hint",
    "error_type",
    "exit_code",
    "traceback",
)
PREFIX = "receipts: "

_format = "text"
_context: dict[str, Any] = {}


def configure(log_format: str) -> None:
    """Choose the format for this process and forget any earlier run's context."""
    global _format
    if log_format not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, not {log_format!r}")
    _format = log_format
    _context.clear()


def is_json() -> bool:
    return _format == "json"


def bind(**fields: Any) -> None:
    """Fields every later line carries (``run_id``, ``corpus``, ``source``, ``entry``);
    ``None`` drops one."""
    for key, value in fields.items():
        if value is None:
            _context.pop(key, None)
        else:
            _context[key] = value


def now() -> str:
    """The current time in UTC, ISO-8601 with milliseconds and a ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record(text: str, *, event: str, level: str = "info", **fields: Any) -> dict[str, Any]:
    """The JSON object of one line: the message is the text without its ``receipts:``
    prefix; the bound context first, the line's own fields over it."""
    message = text[len(PREFIX) :] if text.startswith(PREFIX) else text
    line: dict[str, Any] = {
        "time": now(),
        "level": level,
        "event": event,
        "message": message,
        "run_id": None,
        "corpus": None,
    }
    line.update(_context)
    line.update({k: v for k, v in fields.items() if v is not None})
    return line


def emit(
    text: str,
    *,
    event: str,
    level: str = "info",
    stream: TextIO | None = None,
    **fields: Any,
) -> None:
    """Write one line on stderr (or ``stream``): ``text`` as it is, or its JSON object."""
    out = stream or sys.stderr
    if _format == "json":
        text = json.dumps(record(text, event=event, level=level, **fields), default=str)
    print(text, file=out, flush=True)


_LEVELS = {
    logging.DEBUG: "debug",
    logging.INFO: "info",
    logging.WARNING: "warning",
    logging.ERROR: "error",
    logging.CRITICAL: "critical",
}


def emit_record(record_: logging.LogRecord, text: str) -> None:
    """A Python logging record (a retry, a lock wait) as one line: its ``event`` and
    ``retry`` extras become fields."""
    extras = {key: getattr(record_, key) for key in OPTIONAL_KEYS if hasattr(record_, key)}
    emit(
        text,
        event=getattr(record_, "event", record_.name),
        level=_LEVELS.get(record_.levelno, record_.levelname.lower()),
        **extras,
    )
