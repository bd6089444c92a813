"""The peer: dlt loading a FLAT_CMPL file into DuckDB, merged on the complaint row id.

Run with the interpreter of ``bench/.venv-dlt`` (``make bench-dlt-venv`` creates it), so
dlt never becomes a dependency of receipts; this module imports nothing of receipts.
dlt is fed pyarrow tables straight from Arrow's CSV reader (its fastest documented path:
no per-row Python, Parquet load files) and merges on ``CMPLID``:

    bench/.venv-dlt/bin/python bench/dlt_load.py FILE.zip WORKDIR FIELD,FIELD,...

A second run with the same WORKDIR is the identical re-load.
"""

from __future__ import annotations

import os
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")

import dlt
import pyarrow as pa
import pyarrow.csv as pacsv


def main(zip_path: Path, workdir: Path, fields: list[str]) -> None:
    @dlt.resource(name="complaints", primary_key="CMPLID", write_disposition="merge")
    def complaints() -> Iterator[pa.Table]:
        with zipfile.ZipFile(zip_path) as archive, archive.open("FLAT_CMPL.txt") as raw:
            reader = pacsv.open_csv(
                raw,
                read_options=pacsv.ReadOptions(
                    column_names=fields, encoding="latin1", block_size=16 << 20
                ),
                parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
                convert_options=pacsv.ConvertOptions(
                    column_types=dict.fromkeys(fields, pa.string()), strings_can_be_null=False
                ),
            )
            for batch in reader:
                yield pa.Table.from_batches([batch])

    pipeline = dlt.pipeline(
        pipeline_name="bench_flat_cmpl",
        pipelines_dir=str(workdir / "pipelines"),
        destination=dlt.destinations.duckdb(str(workdir / "dlt.duckdb")),
        dataset_name="nhtsa",
    )
    info = pipeline.run(complaints())
    info.raise_on_failed_jobs()
    print(pipeline.last_trace.last_normalize_info.row_counts.get("complaints", 0))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3].split(","))
