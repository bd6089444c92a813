"""Floors: the least any importer must do with the same input, done the fast way.

Every figure of ``make bench`` is reported as a ratio to the floor measured in the same run.

- :func:`backfill_floor` reads a zipped FLAT_CMPL file with Arrow's multi-threaded CSV
  reader (tab-separated, no quoting, ISO-8859-1), and per read block, inside DuckDB (all
  cores): escapes each field for JSON, assembles each row's object (fields in key order) and
  each document's canonical JSON v1 (its rows grouped by ODI number, in file order; the
  generated file keeps a document's rows adjacent, so only the document still open at the
  end of a block waits for the next), then hashes the bodies with OpenSSL's SHA-256 (several
  times faster than DuckDB's) and inserts ``(doc_id, content_hash, body)`` into a DuckDB
  file through Arrow, the bodies compressed as the warehouse stores them (zstd), in row
  groups small enough that each insert is written straight into the file. No validation,
  no history, no resume.
- :func:`ingest_floor` takes ready records: canonical JSON, SHA-256, one Arrow insert (the
  bodies compressed as the warehouse stores them).

Both open DuckDB themselves: they measure the floor beside the warehouse, not through it.
"""

from __future__ import annotations

import functools
import hashlib
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from sources.nhtsa.flatfile.layouts import CMPL_FIELDS_49
from warehouse.canonical import canonical_json
from warehouse.store import BULK_CHECKPOINT_THRESHOLD

# Checkpoint the WAL into the file as seldom as the warehouse does during bulk writes.
CHECKPOINT_THRESHOLD = BULK_CHECKPOINT_THRESHOLD
FLOOR_ROW_GROUP_SIZE = 4_096
_NAMES = [f"f{i}" for i in range(len(CMPL_FIELDS_49))]
_ODINO = _NAMES[CMPL_FIELDS_49.index("ODINO")]
_YEAR = _NAMES[CMPL_FIELDS_49.index("YEARTXT")]


def _escaped(column: str) -> str:
    return f"""replace(replace({column}, '\\', '\\\\'), '"', '\\"')"""


def _row_object() -> str:
    """A row as a JSON object: its fields in key order (the names need no escaping)."""
    parts = []
    for position, name in enumerate(sorted(CMPL_FIELDS_49)):
        column = _NAMES[CMPL_FIELDS_49.index(name)]
        parts.append("'" + ("{" if position == 0 else ",") + f'"{name}":"' + "'")
        parts.append(_escaped(column))
        parts.append("'\"'")
    parts.append("'}'")
    return "concat(" + ", ".join(parts) + ")"


@functools.cache
def _documents_sql() -> str:
    """Each document of ``_block`` with its canonical bytes. Year "9999" and blanks are not
    model years; the generated file has no other shapes."""
    return f"""
SELECT 'nhtsa/complaint/' || CAST(CAST({_ODINO} AS BIGINT) AS VARCHAR) AS doc_id,
       encode(concat('{{"modelYears":[',
                     coalesce(array_to_string(list_sort(list_distinct(
                         list(CAST({_YEAR} AS INTEGER))
                         FILTER (WHERE {_YEAR} NOT IN ('', '9999')))), ','), ''),
                     '],"rows":[',
                     array_to_string(list_transform(list_sort(list({{'n': n, 'j': j}})),
                                                    lambda e: e.j), ','),
                     ']}}')) AS body
FROM (SELECT *, {_row_object()} AS j FROM _block)
GROUP BY {_ODINO}
"""


def _hashed(documents: pa.Table) -> pa.Table:
    bodies = documents["body"].combine_chunks()
    hashes = [hashlib.sha256(b).hexdigest() for b in bodies.to_pylist()]
    return pa.table({"doc_id": documents["doc_id"], "content_hash": hashes, "body": bodies})


def backfill_floor(zip_path: Path, database: Path, member: str = "FLAT_CMPL.txt") -> int:
    """Read, group, canonical JSON, SHA-256 and an Arrow insert per block; the documents."""
    # Row groups small enough for each block's insert to fill some: DuckDB writes a whole
    # row group straight into the file, compressed, instead of through the WAL and again at
    # a checkpoint. (600,000 rows: 14.0-15.0 s with row groups of 4,096, 16.0-18.9 s with
    # 16,384, 17.4-17.5 s with DuckDB's default 122,880.)
    con = duckdb.connect()
    location = str(database).replace("'", "''")
    con.execute(f"ATTACH '{location}' AS floor (ROW_GROUP_SIZE {FLOOR_ROW_GROUP_SIZE})")
    con.execute("USE floor")
    con.execute("SET enable_progress_bar = false")
    con.execute(f"SET checkpoint_threshold = '{CHECKPOINT_THRESHOLD}'")
    con.execute(
        "CREATE TABLE snapshots (doc_id VARCHAR, content_hash VARCHAR, "
        "body BLOB USING COMPRESSION zstd)"
    )
    documents = 0
    carry: pa.Table | None = None
    offset = 0
    with zipfile.ZipFile(zip_path) as archive, archive.open(member) as raw:
        reader = pacsv.open_csv(
            raw,
            read_options=pacsv.ReadOptions(
                column_names=_NAMES, encoding="latin1", block_size=16 << 20
            ),
            parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(_NAMES, pa.string()), strings_can_be_null=False
            ),
        )
        for batch in reader:
            block = pa.Table.from_batches([batch])
            block = block.append_column("n", pa.array(range(offset, offset + len(block))))
            offset += len(block)
            if carry is not None:
                block = pa.concat_tables([carry, block])
            last = block[_ODINO][-1]
            open_rows = pc.equal(block[_ODINO], last)
            carry = block.filter(open_rows)
            documents += _insert(con, block.filter(pc.invert(open_rows)))
    if carry is not None:
        documents += _insert(con, carry)
    con.close()
    return documents


def _insert(con: duckdb.DuckDBPyConnection, block: pa.Table) -> int:
    if not len(block):
        return 0
    con.register("_block", block)
    built = con.sql(_documents_sql()).to_arrow_table()
    con.unregister("_block")
    con.register("_batch", _hashed(built))
    con.execute("INSERT INTO snapshots SELECT * FROM _batch")
    con.unregister("_batch")
    return len(built)


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
    con.execute(
        "CREATE TABLE snapshots (doc_id VARCHAR, content_hash VARCHAR, "
        "body BLOB USING COMPRESSION zstd)"
    )
    con.execute("INSERT INTO snapshots SELECT * FROM t")
    con.close()
    return time.perf_counter() - started


if __name__ == "__main__":
    print(backfill_floor(Path(sys.argv[1]), Path(sys.argv[2])))
