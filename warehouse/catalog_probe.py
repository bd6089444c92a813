"""Whether a lake's PostgreSQL catalog answers now: a connect to the server's socket (TCP, or
the Unix socket libpq would use), no login.

Once a catalog's server has gone away, DuckDB and DuckLake can fail in other words than
libpq's: "Current transaction is aborted (please ROLLBACK)" from a statement after a
ROLLBACK that could not reach the server, or an INTERNAL error from DuckLake's own state (both
seen when the server was stopped at a random moment of a backfill). An error that names no
cause, on a lake whose catalog does not answer, is the catalog lost
(:func:`warehouse.store.known_error`).
"""

from __future__ import annotations

import shlex
import socket


def _keywords(dsn: str) -> dict[str, str] | None:
    """The ``key=value`` pairs of a libpq keyword/value connection string (None for a URI
    or a string this reads no single place from)."""
    if "://" in dsn:
        return None
    try:
        words = shlex.split(dsn)
    except ValueError:
        return None
    pairs = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep:
            return None
        pairs[key.strip().lower()] = value.strip()
    return pairs


def address(dsn: str) -> tuple[int, str | tuple[str, int]] | None:
    """The socket family and address of the server ``dsn`` names with both ``host`` (or
    ``hostaddr``) and ``port``; None when it leaves either to libpq's defaults (which the
    environment can change: ``PGHOST``, ``PGPORT``), names several, or cannot be read."""
    pairs = _keywords(dsn)
    if pairs is None:
        return None
    host = pairs.get("hostaddr") or pairs.get("host") or ""
    port = pairs.get("port") or ""
    if not host or "," in host or not port.isdigit():
        return None
    if host.startswith("/"):  # the directory of a Unix socket
        return socket.AF_UNIX, f"{host}/.s.PGSQL.{port}"
    return socket.AF_INET6 if ":" in host else socket.AF_INET, (host, int(port))


def answers(dsn: str, timeout: float = 2.0) -> bool | None:
    """Whether the server ``dsn`` names accepts a connection now; None when that cannot be
    told (the string names no single place)."""
    where = address(dsn)
    if where is None:
        return None
    family, target = where
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        try:
            probe.connect(target)
        except OSError:
            return False
    return True
