"""Floors: the least any importer must do with the same input, done the fast way.

Every figure of ``make bench`` is reported as a ratio to the floor measured in the same run.

- :func:`backfill_floor` reads a zipped FLAT_CMPL file with Arrow's multi-threaded CSV
  reader (tab-separated, no quoting, ISO-8859-1), groups the rows of one document (the
  generated file keeps them adjacent, so a group is a run of equal ODI numbers), builds
  canonical JSON v1 of each document (field names in key order, so orjson need not sort)
  and its SHA-256, and inserts ``(doc_id, content_hash, body)`` into a DuckDB file through
  Arrow, one insert per read block. No validation, no history, no resume.
- :func:`ingest_floor` takes ready records: canonical JSON, SHA-256, one Arrow insert.

Both open DuckDB themselves: they measure the floor beside the warehouse, not through it.
"""

from __future__ import annotations

import hashlib
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pyarrow as pa
import pyarrow.csv as pacsv

from sources.nhtsa.flatfile import CMPL_FIELDS_49
from sources.nhtsa.parse import UNKNOWN_MODEL_YEAR
from warehouse.canonical import canonical_json

_ORDER = sorted(range(len(CMPL_FIELDS_49)), key=CMPL_FIELDS_49.__getitem__)
_SORTED = [CMPL_FIELDS_49[i] for i in _ORDER]
_ODINO = CMPL_FIELDS_49.index("ODINO")
_YEAR = CMPL_FIELDS_49.index("YEARTXT")


def _documents(columns: list[list[str]], carry: list[list[str]]) -> tuple[list[bytes], ...]:
    """Canonical bodies of the documents that end in this block; ``carry`` holds the rows of
    the document still open at its end (its rows continue in the next block)."""
    ids: list[str] = []
    hashes: list[str] = []
    bodies: list[bytes] = []
    group: list[Any] = carry[:]
    carry.clear()
    for row in zip(*columns, strict=True):
        if group and group[0][_ODINO] != row[_ODINO]:
            _emit(group, ids, hashes, bodies)
            group = []
        group.append(row)
    carry.extend(group)
    return ids, hashes, bodies  # type: ignore[return-value]


def _emit(group: list[Any], ids: list[str], hashes: list[str], bodies: list[bytes]) -> None:
    years = {int(r[_YEAR]) for r in group if r[_YEAR].isdigit()}
    years.discard(UNKNOWN_MODEL_YEAR)
    body = orjson.dumps(
        {
            "modelYears": sorted(years),
            "rows": [dict(zip(_SORTED, [r[i] for i in _ORDER], strict=True)) for r in group],
        }
    )
    ids.append(f"nhtsa/complaint/{int(group[0][_ODINO])}")
    hashes.append(hashlib.sha256(body).hexdigest())
    bodies.append(body)


def backfill_floor(zip_path: Path, database: Path, member: str = "FLAT_CMPL.txt") -> int:
    """Read, group, canonical JSON, SHA-256 and an Arrow insert per block; the documents."""
    con = duckdb.connect(str(database))
    con.execute("CREATE TABLE snapshots (doc_id VARCHAR, content_hash VARCHAR, body BLOB)")
    names = [f"f{i}" for i in range(len(CMPL_FIELDS_49))]
    documents = 0
    carry: list[list[str]] = []
    with zipfile.ZipFile(zip_path) as archive, archive.open(member) as raw:
        reader = pacsv.open_csv(
            raw,
            read_options=pacsv.ReadOptions(
                column_names=names, encoding="latin1", block_size=16 << 20
            ),
            parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=False
            ),
        )
        for block in reader:
            ids, hashes, bodies = _documents([c.to_pylist() for c in block.columns], carry)
            documents += _insert(con, ids, hashes, bodies)
    if carry:
        ids, hashes, bodies = [], [], []  # type: ignore[var-annotated]
        _emit(carry, ids, hashes, bodies)
        documents += _insert(con, ids, hashes, bodies)
    con.close()
    return documents


def floor_hashes(database: Path) -> list[tuple[str, str]]:
    """``(doc_id, content_hash)`` of every document the floor stored."""
    con = duckdb.connect(str(database), read_only=True)
    try:
        return [
            (str(d), str(h))
            for d, h in con.execute("SELECT doc_id, content_hash FROM snapshots").fetchall()
        ]
    finally:
        con.close()


def _insert(con: duckdb.DuckDBPyConnection, ids: Any, hashes: Any, bodies: Any) -> int:
    batch = pa.table({"doc_id": ids, "content_hash": hashes, "body": pa.array(bodies, pa.binary())})
    con.register("_batch", batch)
    con.execute("INSERT INTO snapshots SELECT * FROM _batch")
    con.unregister("_batch")
    return len(ids)


def ingest_floor(values: list[dict[str, Any]], path: Path) -> float:
    """Canonical JSON + SHA-256 of every record and one Arrow insert: the seconds taken."""
    started = time.perf_counter()
    ids, hashes, bodies = [], [], []
    for i, value in enumerate(values):
        body = canonical_json(value)
        ids.append(f"synthetic/record/bench-{i}")
        hashes.append(hashlib.sha256(body).hexdigest())
        bodies.append(body)
    table = pa.table({"doc_id": ids, "content_hash": hashes, "body": pa.array(bodies, pa.binary())})
    con = duckdb.connect(str(path))
    con.register("t", table)
    con.execute("CREATE TABLE snapshots AS SELECT * FROM t")
    con.close()
    return time.perf_counter() - started


if __name__ == "__main__":
    print(backfill_floor(Path(sys.argv[1]), Path(sys.argv[2])))
