"""A lake's PostgreSQL catalog lost mid-command, told as :class:`CatalogLost` naming it.

DuckDB's message for a lost connection does not name the catalog: the PostgreSQL catalogs
this process opened are remembered here, the latest last. What fails after the server went
away can also fail in other words than libpq's: "Current transaction is aborted (please
ROLLBACK)" after a ROLLBACK that could not reach it, an INTERNAL error from DuckLake's state
(each seen about once in 64 backfills whose catalog was stopped at a random moment). Such an
error, on a lake whose catalog does not answer now (:mod:`warehouse.catalog_probe`), is the
catalog lost too (:func:`gone`).
"""

from __future__ import annotations

import duckdb

from warehouse import catalog_probe, faults
from warehouse.backends import Target
from warehouse.errors import CatalogLost, ReceiptsError

_OPENED: list[str] = []


def opened(location: str) -> None:
    """A lake whose catalog is PostgreSQL's is opened at ``location`` (now the latest)."""
    if location in _OPENED:
        _OPENED.remove(location)
    _OPENED.append(location)


def told_by(message: str) -> CatalogLost | None:
    """The lost catalog DuckDB's ``message`` tells of (named: the latest opened)."""
    return faults.catalog_fault(message, _OPENED[-1]) if _OPENED else None


def gone(
    target: Target, exc: BaseException | None, known: ReceiptsError | None
) -> CatalogLost | None:
    """The catalog lost, for a DuckDB error ``exc`` on the lake ``target`` (``known``: what
    its words were found to tell, if anything): what they tell when it is a lost catalog,
    else, when they tell nothing, whether the catalog's server answers now."""
    if not isinstance(exc, duckdb.Error) or target.catalog != "postgres":
        return None
    if known is not None:
        return known if isinstance(known, CatalogLost) else None
    dsn = target.catalog_dsn
    if dsn and catalog_probe.answers(dsn) is False:
        return CatalogLost(target.location, "the server does not answer")
    return None
