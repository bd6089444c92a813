"""``receipts serve``: the read-only web view of the warehouse, on uvicorn."""

from __future__ import annotations

import logging
import socket

import click

from pipelines import logline
from pipelines.cli.common import handle_errors, warehouse_option

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
BACKLOG = 2048  # uvicorn's default


class _ServerLines(logging.Handler):
    """uvicorn's own messages (a port already taken, say) as lines of receipts' stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            logline.emit_record(record, f"receipts: {record.getMessage()}")
        except Exception:  # a log line must never stop the server
            self.handleError(record)


def _route_server_logs() -> None:
    for name in ("uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [_ServerLines()]
        logger.setLevel(logging.WARNING)
        logger.propagate = False


@click.command("serve")
@warehouse_option
@click.option(
    "--host",
    default=DEFAULT_HOST,
    show_default=True,
    help="The address to listen on; the default answers this machine only "
    "(0.0.0.0 answers every network the machine is on).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The TCP port to listen on (0: any free one; the line on stderr names it).",
)
@handle_errors
def serve(warehouse: str, host: str, port: int) -> None:
    """Serve a read-only web view of the warehouse: corpora and sources with their counts
    and the last runs, search, each document with its provenance and the timeline of its
    revisions (side-by-side and word diffs between any two), the corpus as of a run or
    date, drift between two runs, the claims board, the push ledger and plots. Every page
    has its JSON at the same path plus .json (/documents/DOC_ID.json).

    The warehouse is opened read-only for each request and nothing is written. On a DuckDB
    file, a page asked for while a writer (ingest, refresh) holds the file answers 503 at
    once; a DuckLake warehouse is read while refreshes write. Ctrl-C stops the server
    (exit 130).

    \b
    Examples:
      receipts serve                               # http://127.0.0.1:8000/
      receipts serve --warehouse demo.duckdb --port 8080
      receipts serve --warehouse ducklake:sqlite:catalog.sqlite --host 0.0.0.0
    """
    import uvicorn

    from pipelines.serve.app import create_app
    from warehouse.errors import WarehouseBusy
    from warehouse.store import Warehouse

    data_path = getattr(warehouse, "data_path", None)
    try:  # a location that is no warehouse is refused now, not at the first page
        with Warehouse.open(warehouse, read_only=True, data_path=data_path):
            pass
    except WarehouseBusy as exc:
        logline.emit(
            f"receipts: {exc}; pages answer 503 until it is free",
            event="serve.busy",
            level="warning",
        )
    app = create_app(warehouse, data_path=data_path)
    _route_server_logs()
    listening = _listen(host, port)
    config = uvicorn.Config(
        app, host=host, port=port, log_config=None, access_log=False, lifespan="off"
    )
    shown_host = f"[{host}]" if ":" in host else host
    bound = listening.getsockname()[1]
    logline.emit(
        f"receipts: serving {warehouse} read-only at http://{shown_host}:{bound}/ (Ctrl-C stops)",
        event="serve.listening",
    )
    with listening:
        uvicorn.Server(config).run(sockets=[listening])


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``, so the line saying where the server is comes once it
    is there (and names the port 0 chose)."""
    from warehouse.errors import ReceiptsError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ReceiptsError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(BACKLOG)
    return sock
