"""Writing an export's files as streams of Arrow batches.

DuckDB's ``COPY`` buffers what it writes (whole Parquet row groups; its JSON writer, tens of
MB at a time) and the export sorted the bodies by content hash: on the 1.5 million
snapshots of a two-million-row backfill it ran out of memory under the default 256 MB
limit in every format, and ``revisions`` as NDJSON did too. Here rows are read as batches
(of at most :data:`BATCH_BYTES` of bodies, for snapshots) and each is written before the
next is read:

- snapshots, in the order they were stored: Parquet through pyarrow; CSV through Python's
  ``csv``, quoting only where needed, as DuckDB's ``COPY`` does; NDJSON through orjson,
  the lines DuckDB wrote (bodies in base64 are too large for DuckDB to render a vector of
  rows at a time under a small limit);
- NDJSON of the other tables: each row as DuckDB's ``to_json`` writes it, which is what its
  ``COPY`` wrote, byte for byte.

A file is written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from warehouse.store import Warehouse

BATCH_BYTES = 16 << 20
MAX_BATCH_ROWS = 8_192


def rows_per_batch(widest_row: int) -> int:
    """Rows of at most ``widest_row`` bytes that fill :data:`BATCH_BYTES` (each Arrow batch
    is one allocation in DuckDB, under its memory limit), at most :data:`MAX_BATCH_ROWS`."""
    return max(1, min(MAX_BATCH_ROWS, BATCH_BYTES // max(1, widest_row)))


def _complete(path: Path, write: Callable[[Path], int]) -> int:
    """``write(partial)``, then ``partial`` renamed to ``path``: no half-written file."""
    partial = path.with_name(path.name + ".partial")
    try:
        written = write(partial)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return written


def write_ndjson(warehouse: Warehouse, query: str, path: Path) -> int:
    """The rows of ``query`` (of small values: DuckDB renders each row whole) to ``path``,
    one JSON object a line; how many."""
    lines = warehouse._con.sql(f"SELECT to_json(t)::VARCHAR AS line FROM ({query}) t")
    batches = lines.to_arrow_reader(MAX_BATCH_ROWS)

    def write(partial: Path) -> int:
        written = 0
        with partial.open("w", encoding="utf-8") as out:
            for batch in batches:
                out.write("".join(line + "\n" for line in batch.column(0).to_pylist()))
                written += batch.num_rows
        return written

    return _complete(path, write)


def _batch_rows(warehouse: Warehouse, cited: str) -> int:
    """Snapshots a batch holds: :data:`BATCH_BYTES` over twice the largest body ``cited``
    names (base64 is a third larger)."""
    largest = warehouse._scalar(
        f"SELECT max(s.size) FROM snapshots s SEMI JOIN {cited} c USING (content_hash)"
    )
    return rows_per_batch(int(largest or 0) * 2 + 256)


def write_snapshots(warehouse: Warehouse, cited: str, path: Path, fmt: str) -> int:
    """Write the snapshots whose ``content_hash`` the table ``cited`` holds to ``path`` as
    ``fmt`` (``parquet``: bytes as BLOB; ``csv`` and ``ndjson``: as ``body_base64``);
    return how many."""
    body = "s.body" if fmt == "parquet" else "to_base64(s.body) AS body_base64"
    query = (
        f"SELECT s.content_hash, s.size, s.media_type, s.stored_run, {body} "
        f"FROM snapshots s SEMI JOIN {cited} c USING (content_hash)"
    )
    batches = warehouse._con.sql(query).to_arrow_reader(_batch_rows(warehouse, cited))
    writer = {"parquet": _parquet, "csv": _csv, "ndjson": _ndjson}[fmt]
    return _complete(path, lambda partial: writer(batches, partial))


def _parquet(batches: pa.RecordBatchReader, path: Path) -> int:
    written = 0
    with pq.ParquetWriter(path, batches.schema) as out:
        for batch in batches:
            out.write_batch(batch)
            written += batch.num_rows
    return written


def _csv(batches: pa.RecordBatchReader, path: Path) -> int:
    written = 0
    with path.open("w", newline="", encoding="utf-8") as out:
        rows = csv.writer(out, lineterminator="\n")
        rows.writerow(batches.schema.names)
        for batch in batches:
            rows.writerows(zip(*(column.to_pylist() for column in batch.columns), strict=True))
            written += batch.num_rows
    return written


def _ndjson(batches: pa.RecordBatchReader, path: Path) -> int:
    """Snapshot rows (strings and integers) as DuckDB's ``to_json`` writes them: compact,
    in column order, ``/`` and non-ASCII characters as they are."""
    written = 0
    with path.open("wb") as out:
        for batch in batches:
            out.write(b"".join(orjson.dumps(row) + b"\n" for row in batch.to_pylist()))
            written += batch.num_rows
    return written
