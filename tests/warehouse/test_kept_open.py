"""A connection whose ROLLBACK failed is kept, never closed, and the process ends without
destructors once the command has told its error (warehouse.kept_open): a destructor's
rollback failing (a lake's catalog gone) would abort it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.conftest import REPO
from warehouse import kept_open
from warehouse.store import Warehouse


@pytest.fixture(autouse=True)
def kept(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """This test's kept connections (the worker's own list stays empty: it must not end
    without destructors)."""
    connections: list[object] = []
    monkeypatch.setattr(kept_open, "_kept", connections)
    return connections


class LostCatalog:
    """A connection whose catalog went away: every statement after ``BEGIN`` fails, the
    ROLLBACK too, as DuckDB's PostgreSQL extension answers then."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con
        self.closed = False
        self.in_transaction = False

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "BEGIN TRANSACTION":
            self.in_transaction = True
            return self
        if self.in_transaction:
            raise duckdb.IOException(
                'Failed to execute query "ROLLBACK": server closed the connection unexpectedly'
            )
        return self._con.execute(sql, *args)

    def close(self) -> None:
        self.closed = True
        self._con.close()


def test_a_warehouse_whose_rollback_failed_keeps_its_connection(
    tmp_path: Path, kept: list[object]
) -> None:
    wh = Warehouse.open(str(tmp_path / "w.duckdb"))
    lost = LostCatalog(wh._con)
    wh._con = lost  # type: ignore[assignment]
    with pytest.raises(duckdb.IOException), wh._transaction() as con:
        con.execute("SELECT 1")
    wh.close()
    assert kept == [lost] and not lost.closed


def test_a_rollback_with_no_transaction_closes_as_usual(tmp_path: Path, kept: list[object]) -> None:
    wh = Warehouse.open(str(tmp_path / "w.duckdb"))
    wh._rollback()  # DuckDB: "cannot rollback - no transaction is active"
    wh.close()
    assert kept == []


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )


# A process that keeps an object whose destructor would say so (the test adds how it ends).
_KEPT = (
    "import sys\n"
    "from warehouse import kept_open\n"
    "class Aborts:\n"
    "    def __del__(self): print('destructor ran', file=sys.stderr)\n"
    "kept_open.keep(Aborts())\n"
)


def test_the_process_ends_with_the_error_code_and_its_output_flushed() -> None:
    done = _python(
        _KEPT + "print('told', end='')\nkept_open.exit_if_any(3)\nprint('not reached')\n"
    )
    assert (done.returncode, done.stdout) == (3, "told")
    assert "destructor ran" not in done.stderr


def test_an_exit_by_another_path_ends_without_destructors_too() -> None:
    done = _python(_KEPT + "sys.exit(0)\n")
    assert done.returncode == 1 and "destructor ran" not in done.stderr


def test_nothing_kept_exits_as_usual() -> None:
    done = _python("from warehouse import kept_open\nkept_open.exit_if_any(3)\nprint('on')\n")
    assert (done.returncode, done.stdout) == (0, "on\n")


def test_a_connection_whose_cursor_is_kept_is_kept_too(kept: list[object]) -> None:
    """Closing a DuckDB connection closes its cursors, the kept one with them."""
    con = duckdb.connect()
    cursor = con.cursor()
    cursor.execute("BEGIN TRANSACTION")
    kept_open.keep(cursor)
    kept_open.close(con)
    assert kept == [cursor, con]
    assert cursor.execute("SELECT 42").fetchall() == [(42,)]  # still open


def test_with_nothing_kept_a_connection_is_closed() -> None:
    con = duckdb.connect()
    kept_open.close(con)
    with pytest.raises(duckdb.ConnectionException):
        con.execute("SELECT 1")
