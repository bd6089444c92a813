"""A PostgreSQL catalog lock ends its transaction whatever fails (warehouse.catalog_lock).

A DuckDB cursor closed, or collected, with its PostgreSQL transaction still open rolls it
back in a destructor, and a rollback failing there (the catalog gone) aborts the process;
so every path out of taking or releasing a lock ends the cursor's transaction first, and a
cursor whose ROLLBACK failed is kept, not closed (warehouse.kept_open). The cursors here are
stand-ins that record what they were asked."""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import pytest

from warehouse import kept_open
from warehouse.catalog_lock import CatalogLocks


@pytest.fixture(autouse=True)
def kept(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The cursors kept open by this test (not this process's: it must not end without
    destructors when the test ends)."""
    cursors: list[object] = []
    monkeypatch.setattr(kept_open, "_kept", cursors)
    return cursors


@dataclass
class Target:
    catalog: str | None = "postgres"
    catalog_dsn: str | None = "dbname=catalog"


@dataclass
class Cursor:
    got: bool = True
    gone: bool = False  # the catalog went away: every statement reaching it fails
    asked: list[str] = field(default_factory=list)
    closed: bool = False

    def execute(self, sql: str) -> Cursor:
        self.asked.append(sql.split(" FROM postgres_query")[0] if "postgres_query" in sql else sql)
        if self.gone and ("postgres_query" in sql or sql == "ROLLBACK"):
            raise duckdb.IOException("Failed to execute query: server closed the connection")
        return self

    def fetchall(self) -> list[tuple[bool]]:
        return [(self.got,)]

    def close(self) -> None:
        self.closed = True


@dataclass
class Connection:
    made: list[Cursor] = field(default_factory=list)
    got: bool = True
    gone: bool = False

    def cursor(self) -> Cursor:
        self.made.append(Cursor(self.got, self.gone))
        return self.made[-1]


def locks(con: Connection) -> CatalogLocks:
    return CatalogLocks(Target(), con)  # type: ignore[arg-type]


def test_a_lock_taken_keeps_its_transaction_until_released() -> None:
    con = Connection()
    held = locks(con)
    assert held.try_acquire("corpus:a")
    (cursor,) = con.made
    assert cursor.asked == ["BEGIN TRANSACTION", "SELECT *"] and not cursor.closed
    held.release("corpus:a")
    assert cursor.asked[-1] == "ROLLBACK" and cursor.closed


def test_a_lock_someone_else_holds_ends_its_transaction(kept: list[object]) -> None:
    con = Connection(got=False)
    assert not locks(con).try_acquire("corpus:a")
    (cursor,) = con.made
    assert cursor.asked[-1] == "ROLLBACK" and cursor.closed and kept == []


def test_the_catalog_gone_while_taking_a_lock_rolls_back_and_keeps_the_cursor(
    kept: list[object],
) -> None:
    con = Connection(gone=True)
    with pytest.raises(duckdb.IOException, match="server closed the connection"):
        locks(con).try_acquire("serial:tlog")
    (cursor,) = con.made
    assert cursor.asked == ["BEGIN TRANSACTION", "SELECT *", "ROLLBACK"]
    assert not cursor.closed and kept == [cursor]  # its ROLLBACK failed: never closed


def test_the_catalog_gone_while_releasing_rolls_back_and_keeps_the_cursor(
    kept: list[object],
) -> None:
    con = Connection()
    held = locks(con)
    assert held.try_acquire("corpus:a")
    (cursor,) = con.made
    cursor.gone = True
    held.release("corpus:a")
    assert cursor.asked[-2:] == ["SELECT *", "ROLLBACK"]
    assert not cursor.closed and kept == [cursor]
