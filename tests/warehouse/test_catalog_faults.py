"""What a lake's PostgreSQL catalog going away is told as (warehouse.faults)."""

from __future__ import annotations

import socket
from pathlib import Path

import duckdb
import pytest

from warehouse import catalog_probe
from warehouse.backends import _open_error, parse
from warehouse.errors import CatalogLost
from warehouse.store import Warehouse

LAKE = "ducklake:postgres:dbname=catalog host=127.0.0.1 port=5999 user=postgres"


def test_the_catalog_lost_while_a_lake_is_made_is_a_lost_catalog() -> None:
    """Seen when the server stopped while a new lake's tables were made."""
    error = _open_error(
        parse(LAKE),
        duckdb.IOException(
            'Failed to initialize DuckLake: Failed to execute query "CREATE TABLE '
            '"public"."ducklake_schema"(...)": server closed the connection unexpectedly'
        ),
    )
    assert isinstance(error, CatalogLost)
    assert str(error).startswith(f"lost the connection to the lake's catalog {LAKE}: ")
    assert error.hint and "run the same command again" in error.hint


def test_a_catalog_that_never_answered_is_not_lost() -> None:
    error = _open_error(
        parse(LAKE),
        duckdb.IOException(
            'Unable to connect to Postgres at "dbname=catalog": connection to server at '
            '"127.0.0.1", port 5999 failed: Connection refused'
        ),
    )
    assert not isinstance(error, CatalogLost)
    assert str(error).startswith(f"cannot open warehouse {LAKE}: ")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens once it is closed


def test_libpq_strings_name_where_a_probe_connects() -> None:
    assert catalog_probe.address("dbname=c host=127.0.0.1 port=5999") == (
        socket.AF_INET, ("127.0.0.1", 5999),
    )  # fmt: skip
    assert catalog_probe.address("host=/tmp/pg port=5432") == (
        socket.AF_UNIX,
        "/tmp/pg/.s.PGSQL.5432",
    )
    assert catalog_probe.address("host='::1' port=6001") == (socket.AF_INET6, ("::1", 6001))
    # Left to libpq's defaults (which PGHOST and PGPORT change), or unreadable: not told.
    for unsure in ("dbname=c", "host=h", "port=5432", "postgresql://h/db", "host=a,b port=1"):
        assert catalog_probe.address(unsure) is None, unsure


def test_a_probe_tells_a_server_that_answers_from_one_that_does_not() -> None:
    assert catalog_probe.answers(f"host=127.0.0.1 port={_closed_port()}") is False
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert catalog_probe.answers(f"host=127.0.0.1 port={server.getsockname()[1]}") is True
    assert catalog_probe.answers("host=a,b") is None


def test_an_error_naming_no_cause_is_the_catalog_lost_when_it_does_not_answer(
    tmp_path: Path,
) -> None:
    """What failed after the server went away, in other words than libpq's."""
    after = duckdb.TransactionException(
        "TransactionContext Error: Failed to get global stats information from DuckLake: "
        "Current transaction is aborted (please ROLLBACK)"
    )
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        up = server.getsockname()[1]
        for port, lost in ((_closed_port(), True), (up, False)):
            wh = Warehouse.open(str(tmp_path / "w.duckdb"))
            wh.target = parse(f"ducklake:postgres:dbname=c host=127.0.0.1 port={port}")
            if lost:
                with pytest.raises(CatalogLost, match="the server does not answer"), wh:
                    raise after
            else:
                with pytest.raises(duckdb.TransactionException), wh:
                    raise after
    with pytest.raises(duckdb.TransactionException), Warehouse.open(str(tmp_path / "w.duckdb")):
        raise after  # a DuckDB file has no catalog to lose
