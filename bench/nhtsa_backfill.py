"""Benchmark: backfilling a FLAT_CMPL-style complaints file, beside a raw baseline.

``generate(path, rows)`` writes a deterministic zipped complaints file of ``rows`` rows in
the 49-field layout, with realistic field widths (narratives of 200–2,000 characters, one
to three rows per ODI number as in the published file, a few ``9999`` model years).

``run(rows, workdir)`` backfills it through the real path (``receipts backfill nhtsa`` in a
subprocess, into a fresh warehouse) and, in the same run, a raw baseline (read the zip,
split each line, canonical JSON, SHA-256, one Arrow insert per 50,000 rows into DuckDB,
under the same DuckDB memory limit).
Each is measured in its own subprocess: wall time, rows/s and peak RSS (its own VmHWM).

    python -m bench.nhtsa_backfill --rows 2000000 --workdir bench/data
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

from sources.nhtsa.flatfile import CMPL_FIELDS_49

REPO = Path(__file__).resolve().parent.parent
MEMBER = "FLAT_CMPL.txt"

_MAKES = [
    ("HONDA", "Honda (American Honda Motor Co.)", ["CR-V", "ACCORD", "CIVIC", "PILOT"]),
    ("TOYOTA", "Toyota Motor Engineering & Manufacturing", ["CAMRY", "RAV4", "COROLLA"]),
    ("FORD", "Ford Motor Company", ["F-150", "ESCAPE", "EXPLORER", "FOCUS"]),
    ("CHEVROLET", "General Motors LLC", ["SILVERADO 1500", "EQUINOX", "MALIBU"]),
    ("NISSAN", "Nissan North America, Inc.", ["ROGUE", "ALTIMA", "SENTRA"]),
]
_COMPONENTS = [
    "FORWARD COLLISION AVOIDANCE: AUTOMATIC EMERGENCY BRAKING",
    "SERVICE BRAKES, HYDRAULIC:ANTILOCK/TRACTION CONTROL/ELECTRONIC LIMITED SLIP",
    "ELECTRICAL SYSTEM",
    "ENGINE AND ENGINE COOLING:ENGINE",
    "STEERING:ELECTRIC POWER ASSIST SYSTEM",
    "AIR BAGS:FRONTAL:DRIVER SIDE:INFLATOR MODULE",
    "POWER TRAIN:AUTOMATIC TRANSMISSION",
    "STRUCTURE:BODY:HOOD AND HOOD LATCH",
]
_SENTENCES = [
    "While driving at approximately 45 mph the vehicle braked abruptly without any obstacle.",
    "The contact stated that the warning light illuminated on the instrument panel.",
    'The dealer said the "CMBS" system was operating as designed and no repair was made.',
    "The manufacturer was notified of the failure and a case number was provided.",
    "The vehicle was taken to an independent mechanic who could not duplicate the failure.",
    "The failure recurred several times on the highway and in city traffic.",
    "The approximate failure mileage was 23,000 and the vehicle was not repaired.",
    "The contact owns a vehicle and stated that the engine stalled while idling at a light.",
    "There were no injuries; the contact was nearly rear-ended by the following vehicle.",
    "The steering wheel became stiff and difficult to turn at low speed.",
]
_STATES = ["CA", "TX", "FL", "NY", "IL", "PA", "OH", "GA", "NC", "MI", "WA", "AZ"]


def _narratives(rng: random.Random, count: int = 2048) -> list[str]:
    out = []
    for _ in range(count):
        target = rng.choice((200, 400, 700, 700, 1000, 1400, 2000))
        parts: list[str] = []
        while sum(len(p) + 1 for p in parts) < target:
            parts.append(rng.choice(_SENTENCES))
        out.append(" ".join(parts)[:2000].upper())
    return out


def _date(rng: random.Random, first_year: int = 1995, last_year: int = 2025) -> str:
    return f"{rng.randint(first_year, last_year)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}"


def generate(path: Path, rows: int, seed: int = 1) -> Path:
    """Write a deterministic zipped FLAT_CMPL-style file of ``rows`` rows (49 fields)."""
    rng = random.Random(seed)
    narratives = _narratives(rng)
    template = dict.fromkeys(CMPL_FIELDS_49, "")
    template.update(
        FIRE="N", INJURED="0", DEATHS="0", CITY="SPRINGFIELD", CMPL_TYPE="IVOQ",
        POLICE_RPT_YN="N", ORIG_OWNER_YN="Y", ANTI_BRAKES_YN="Y", CRUISE_CONT_YN="N",
        NUM_CYLS="4", DRIVE_TRAIN="FWD", FUEL_TYPE="GS", TRANS_TYPE="AUTO", PROD_TYPE="V",
        MEDICAL_ATTN="N", VEHICLES_TOWED_YN="N",
    )  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    written = 0
    odi = 10_000_000
    with (
        zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf,
        zf.open(MEMBER, "w", force_zip64=True) as out,
    ):
        lines: list[str] = []
        while written < rows:
            odi += 1
            make, mfr, models = rng.choice(_MAKES)
            model = rng.choice(models)
            year = "9999" if rng.random() < 0.01 else str(rng.randint(1995, 2025))
            narrative = narratives[rng.randrange(len(narratives))]
            crash = "Y" if rng.random() < 0.1 else "N"
            filed = _date(rng, 2000)
            group = 1 if rng.random() < 0.75 else (2 if rng.random() < 0.8 else 3)
            for _ in range(min(group, rows - written)):
                written += 1
                row = {
                    **template,
                    "CMPLID": str(written),
                    "ODINO": str(odi),
                    "MFR_NAME": mfr,
                    "MAKETXT": make,
                    "MODELTXT": model,
                    "YEARTXT": year,
                    "CRASH": crash,
                    "FAILDATE": _date(rng),
                    "COMPDESC": rng.choice(_COMPONENTS),
                    "STATE": rng.choice(_STATES),
                    "VIN": f"{rng.getrandbits(44):011X}"[:11],
                    "DATEA": filed,
                    "LDATE": filed,
                    "MILES": str(rng.randint(0, 150_000)),
                    "CDESCR": narrative,
                    "VEH_SPEED": str(rng.randint(0, 80)),
                }
                lines.append("\t".join(row[name] for name in CMPL_FIELDS_49))
            if len(lines) >= 10_000:
                out.write(("\n".join(lines) + "\n").encode("iso-8859-1"))
                lines = []
        if lines:
            out.write(("\n".join(lines) + "\n").encode("iso-8859-1"))
    partial.replace(path)
    return path


def baseline(zip_path: Path, database: Path, batch: int = 50_000) -> int:
    """The raw floor: read + split + canonical JSON + SHA-256 + one Arrow insert per batch."""
    import duckdb
    import pyarrow as pa

    from pipelines.backfill import DEFAULT_MEMORY_LIMIT
    from warehouse.canonical import canonical_json

    # The same DuckDB memory budget as the backfill, so peak RSS compares like with like.
    con = duckdb.connect(str(database), config={"memory_limit": DEFAULT_MEMORY_LIMIT})
    con.execute("CREATE TABLE snapshots (content_hash VARCHAR, body BLOB)")
    hashes: list[str] = []
    bodies: list[bytes] = []
    rows = 0

    def flush() -> None:
        table = pa.table({"content_hash": hashes, "body": pa.array(bodies, pa.binary())})
        con.register("_batch", table)
        con.execute("INSERT INTO snapshots SELECT * FROM _batch")
        con.unregister("_batch")
        hashes.clear()
        bodies.clear()

    with zipfile.ZipFile(zip_path) as zf, zf.open(MEMBER) as raw:
        for line in raw:
            parts = line.rstrip(b"\r\n").decode("iso-8859-1").split("\t")
            body = canonical_json(dict(zip(CMPL_FIELDS_49, parts, strict=False)))
            hashes.append(hashlib.sha256(body).hexdigest())
            bodies.append(body)
            rows += 1
            if len(bodies) >= batch:
                flush()
    if bodies:
        flush()
    con.close()
    return rows


# Runs a module as ``__main__`` with the given argv and, however it exits, writes its own
# VmHWM (kB) to $RECEIPTS_BENCH_HWM: ``wait4``'s ru_maxrss would include the parent's.
_HWM_RUNNER = """
import os, runpy, sys
sys.argv = sys.argv[1:]
try:
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
finally:
    hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    with open(os.environ["RECEIPTS_BENCH_HWM"], "w") as out:
        out.write(hwm.split()[1])
"""


def measure(module: str, args: list[str], output: Path) -> dict[str, Any]:
    """Run ``python -m module args`` in a subprocess: its wall time and peak RSS."""
    hwm = output.with_suffix(".hwm")
    env = {**os.environ, "PYTHONPATH": str(REPO), "RECEIPTS_BENCH_HWM": str(hwm)}
    command = [sys.executable, "-c", _HWM_RUNNER, module, *args]
    started = time.perf_counter()
    with output.open("wb") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{module} exited {done.returncode}: {output.read_text()[-2000:]}")
    return {"seconds": round(seconds, 3), "peak_rss_mb": round(int(hwm.read_text()) / 1024, 1)}


def run(rows: int, workdir: Path) -> dict[str, Any]:
    """Backfill a generated ``rows``-row complaints file and the raw baseline; the numbers."""
    workdir.mkdir(parents=True, exist_ok=True)
    zip_path = workdir / f"FLAT_CMPL-{rows}.zip"
    if not zip_path.exists():
        generate(zip_path, rows)
    warehouse = workdir / "bench-backfill.duckdb"
    floor_db = workdir / "bench-baseline.duckdb"
    for stale in (warehouse, floor_db, warehouse.with_name(warehouse.name + ".lock")):
        stale.unlink(missing_ok=True)
    backfill = measure(
        "pipelines.cli",
        ["backfill", "nhtsa", "--file", str(zip_path), "--kind", "complaints",
         "--warehouse", str(warehouse), "--json", "--scratch-dir", str(workdir / "scratch")],
        workdir / "backfill.out",
    )  # fmt: skip
    report = json.loads((workdir / "backfill.out").read_text())
    floor = measure(
        "bench.nhtsa_backfill", ["--baseline", str(zip_path), str(floor_db)], workdir / "base.out"
    )
    for result in (backfill, floor):
        result["rows_per_s"] = round(rows / result["seconds"])
    backfill["documents"] = report["documents"]["new"] + report["documents"]["unchanged"]
    return {
        "rows": rows,
        "file_bytes": zip_path.stat().st_size,
        "backfill": backfill,
        "baseline": floor,
        "slowdown": round(backfill["seconds"] / floor["seconds"], 2),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--workdir", type=Path, default=REPO / "bench" / "data")
    parser.add_argument("--baseline", nargs=2, metavar=("ZIP", "DB"), type=Path)
    args = parser.parse_args(argv)
    if args.baseline:
        print(baseline(*args.baseline))
        return
    print(json.dumps(run(args.rows, args.workdir), indent=2))


if __name__ == "__main__":
    main()
