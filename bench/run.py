"""``make bench``: run every benchmark, write JSON, print a table.

Absolute times on a shared machine are noisy; every figure is reported beside a baseline
measured in the same run, as a ratio.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import duckdb
from rich.console import Console
from rich.table import Table

from bench import (
    claims,
    ingest,
    lake,
    nhtsa_backfill,
    proofs,
    publish_plan,
    refresh_requests,
    serve,
    tlog,
)
from pipelines import __version__

# Generated flat files and scratch warehouses of the backfill benchmark (git-ignored).
DATA = Path(__file__).resolve().parent / "data"

BENCHMARKS: dict[str, Callable[[bool], dict[str, Any]]] = {
    "ingest": lambda quick: ingest.run(20_000 if quick else 200_000, repeats=1 if quick else 3),
    "backfill": lambda quick: nhtsa_backfill.run(
        100_000 if quick else 2_000_000, DATA, repeats=1 if quick else 3
    ),
    "publish": lambda quick: publish_plan.run(10_000 if quick else 100_000, changed_percent=1.0),
    "refresh_requests": lambda quick: refresh_requests.run(),
    # full size: claims.run(revisions=1_000_000, claims=100_000)
    "claims": lambda quick: claims.run(20_000 if quick else 100_000, 2_000 if quick else 10_000),
    "proofs": lambda quick: proofs.run(
        2_000 if quick else 10_000, repeats=1 if quick else 3, scratch=DATA
    ),
    # file vs ducklake:sqlite vs ducklake:postgres, (bench/lake.py); the backfill on a file
    # vs ducklake:postgres
    "lake": lambda quick: lake.run(
        5_000 if quick else 50_000, 20_000 if quick else 200_000, DATA, 1 if quick else 3
    ),
    "tlog": lambda quick: tlog.run(
        # entries, first-backfill rows (the two million), first-ingest records
        *((20_000, 20_000, 20_000) if quick else (2_000_000, 2_000_000, 200_000)),
        DATA,
        # five: a share of 5-10% is measured on runs whose own spread is as large
        repeats=1 if quick else 5,
    ),
    # the document page and search of `receipts serve` on the backfill's warehouse
    "serve": lambda quick: serve.run(
        20_000 if quick else 2_000_000,
        DATA,
        samples=10 if quick else 30,
        searches=1 if quick else 5,
    ),
}


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "duckdb": duckdb.__version__,
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "receipts": __version__,
    }


Row = tuple[str, str, str]


def _timed(part: dict[str, Any]) -> str:
    """``median s (min–max, n runs)``."""
    return f"{part['median']:.2f} s ({part['min']:.2f}–{part['max']:.2f}, {part['runs']} runs)"


def _cpu(result: dict[str, Any], name: str) -> str:
    """``; CPU <median> s on <n> cores`` where the results hold CPU time (older ones do not)."""
    cpu, busy = result.get("cpu_seconds", {}), result.get("cores_busy", {})
    if name not in cpu or name not in busy:
        return ""
    return f"; CPU {cpu[name]['median']:.1f} s on {busy[name]} cores"


def ingest_rows(result: dict[str, Any]) -> list[Row]:
    """The floor (canonical JSON + SHA-256 + one Arrow insert), the source producing the
    records alone, then the engine's first ingest, identical re-ingest and 1%-changed ingest;
    medians of repeated runs."""
    seconds, ratios, count = result["seconds"], result["ratios"], result["records"]
    rows = [
        (
            f"ingest: floor, {count:,} records (canonical JSON + SHA-256 + one Arrow insert)",
            _timed(seconds["floor"]) + _cpu(result, "floor"),
            "1.00× (floor)",
        ),
        (
            f"ingest: first ingest, {count:,} records",
            _timed(seconds["first"]) + _cpu(result, "first"),
            f"{ratios['first_to_floor']}× the floor",
        ),
        (
            "ingest: identical re-ingest (writes nothing)",
            _timed(seconds["identical"]) + _cpu(result, "identical"),
            f"{ratios['identical_to_first']}× the first ingest",
        ),
        (
            "ingest: 1% changed",
            _timed(seconds["changed"]) + _cpu(result, "changed"),
            f"{ratios['changed_to_first']}× the first ingest",
        ),
    ]
    if "source" in seconds:  # results from before it was measured do not hold it
        rows.insert(
            1,
            (
                "ingest: the source producing the records alone (no ingest; the least any "
                "re-ingest pays)",
                _timed(seconds["source"]) + _cpu(result, "source"),
                f"{ratios['source_to_first']}× the first ingest",
            ),
        )
    larger = result.get("larger_warehouse")  # results from before it was measured lack it
    if larger is not None:
        rows.append(
            (
                f"ingest: identical re-ingest in a warehouse of {larger['documents']:,} "
                f"documents (vs of its {count:,} alone)",
                _timed(larger["seconds"]["larger"]),
                f"{larger['ratio']}× the same in a warehouse of its records alone "
                f"({larger['seconds']['alone']['median']} s)",
            )
        )
    peak = result["peak_rss_mb"]
    rows.append(
        (
            "ingest: peak RSS, ¼ vs full corpus",
            " / ".join(
                f"{peak[k]} MB"
                for k in sorted(
                    (k for k in peak if k != "ratio"), key=lambda k: int(k.split("_")[0])
                )
            ),
            f"{peak['ratio']}×",
        )
    )
    return rows


def backfill_rows(result: dict[str, Any]) -> list[Row]:
    """``receipts backfill nhtsa`` of a generated complaints file beside its floor (Arrow's
    CSV reader, grouping, canonical JSON, SHA-256, Arrow insert) and dlt, each in its own
    process; medians of repeated runs, with their CPU time where measured."""
    seconds, ratios, rss = result["seconds"], result["ratios"], result["peak_rss_mb"]
    per_s, n = result["rows_per_s"], f"{result['rows']:,} complaint rows"
    cpu_ratio = ratios.get("backfill_cpu_to_floor_cpu")
    rows = [
        (
            f"backfill: floor, {n}",
            f"{_timed(seconds['floor'])}; {per_s['floor']:,} rows/s{_cpu(result, 'floor')}",
            "1.00× (floor)",
        ),
        (
            f"backfill: receipts backfill nhtsa, {n}",
            f"{_timed(seconds['backfill'])}; {per_s['backfill']:,} rows/s; "
            f"peak RSS {rss['backfill']} MB{_cpu(result, 'backfill')}",
            f"{ratios['backfill_to_floor']}× the floor"
            + (f" (CPU time {cpu_ratio}× the floor's)" if cpu_ratio is not None else ""),
        ),
        (
            "backfill: identical re-run (a new run; recognizes the file, writes no revision)",
            f"{_timed(seconds['rerun'])}; peak RSS {rss['rerun']} MB{_cpu(result, 'rerun')}",
            f"{ratios['rerun_to_first']}× the first run",
        ),
        (
            "backfill: peak RSS, ¼ of the file vs all of it",
            f"{rss['quarter']} MB / {rss['backfill']} MB",
            f"{ratios['rss_full_to_quarter']}×",
        ),
    ]
    if "rescan" in seconds:  # measured since re-runs recognize an identical file
        rows.insert(
            3,
            (
                "backfill: identical re-run with --rescan (reads the file again)",
                f"{_timed(seconds['rescan'])}; peak RSS {rss['rescan']} MB{_cpu(result, 'rescan')}",
                f"{ratios['rescan_to_first']}× the first run",
            ),
        )
    if "dlt_first" in seconds:
        rows += [
            (
                "backfill: dlt, first load (merge on CMPLID, fed Arrow tables)",
                f"{_timed(seconds['dlt_first'])}; peak RSS {rss['dlt_first']} MB"
                f"{_cpu(result, 'dlt_first')}",
                f"dlt's time ÷ ours: {ratios['dlt_first_to_backfill']}× (above 1: ours is faster)",
            ),
            (
                "backfill: dlt, identical re-load",
                f"{_timed(seconds['dlt_reload'])}; peak RSS {rss['dlt_reload']} MB"
                f"{_cpu(result, 'dlt_reload')}",
                f"dlt's time ÷ ours: {ratios['dlt_reload_to_rerun']}× (above 1: ours is faster)"
                + (
                    f"; ÷ --rescan's: {ratios['dlt_reload_to_rescan']}×"
                    if "dlt_reload_to_rescan" in ratios
                    else ""
                ),
            ),
        ]
    return rows


def _seconds(part: dict[str, Any]) -> float:
    return float(part["plan_seconds"]) + float(part["push_seconds"])


def publish_rows(result: dict[str, Any]) -> list[Row]:
    """Planning and pushing against an in-memory target; the baseline is the first push,
    which sends every document (what re-sending the whole corpus each time would cost)."""
    first = _seconds(result["first_push"])
    rows = []
    for key, label, expected in (
        ("first_push", f"first push of {result['documents']:,} documents", result["documents"]),
        ("identical_push", "identical corpus", 0),
        ("changed_push", f"{result['changed_percent']:g}% changed", result["expected_changed"]),
    ):
        part = result[key]
        sent = f"{part['mutations']:,} mutations in {part['transactions']} transaction(s)"
        needed = part["size_lower_bound"] if part["mutations"] else 0
        ratio = "1.00× (baseline)" if key == "first_push" else f"{_seconds(part) / first:.2f}×"
        rows.append(
            (
                f"publish: {label}",
                f"{_seconds(part):.2f} s; {sent}",
                f"{ratio}; expected {expected:,} mutations, ≥{needed} transaction(s)",
            )
        )
    return rows


def refresh_rows(result: dict[str, Any]) -> list[Row]:
    rows = []
    for name, part in result["corpora"].items():
        rows.append(
            (
                f"refresh of unchanged {name} ({part['documents']} documents): HTTP requests",
                f"{part['second_refresh_requests']}",
                f"{part['ratio_to_first_refresh']:.2f}× of a first refresh "
                f"({part['first_refresh_requests']})",
            )
        )
    return rows


def claims_rows(result: dict[str, Any]) -> list[Row]:
    """The bulk claims check beside one plain scan of every revision's stored text."""
    size = f"{result['claims']:,} claims, {result['revisions']:,} revisions"
    return [
        (
            "claims: baseline (one scan of every revision's text)",
            f"{result['baseline_seconds']} s",
            "1.00×",
        ),
        (
            f"claims: first check ({size}; reader text computed)",
            f"{result['first_check_seconds']} s",
            f"{result['first_ratio_to_baseline']}× of baseline",
        ),
        (
            f"claims: steady check ({size}; every later refresh)",
            f"{result['steady_check_seconds']} s",
            f"{result['steady_ratio_to_baseline']}× of baseline",
        ),
    ]


ROWS: dict[str, Callable[[dict[str, Any]], list[Row]]] = {
    "ingest": ingest_rows,
    "backfill": backfill_rows,
    "publish": publish_rows,
    "refresh_requests": refresh_rows,
    "claims": claims_rows,
    "lake": lake.rows,
    "tlog": tlog.rows,
    "proofs": proofs.rows,
    "serve": serve.rows,
}


def table_rows(name: str, result: dict[str, Any]) -> list[Row]:
    rows = ROWS[name](result)
    for target, ok in result.get("targets", {}).items():
        rows.append((f"{name}: target {target.replace('_', ' ')}", "met" if ok else "NOT MET", ""))
    return rows


def markdown(results: dict[str, Any]) -> str:
    """The README's table of a results file: the same rows as the screen table."""
    lines = ["| measure | value | ratio |", "|---|---|---|"]
    for name, result in results["results"].items():
        for row in table_rows(name, result):
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return "\n".join(lines) + "\n"


@click.command()
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("out/bench/results.json"),
    show_default=True,
    help="Where the results go (the committed bench/results.json only when named).",
)
@click.option(
    "--markdown-from",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Run nothing: print the Markdown table of an existing results file.",
)
@click.option(
    "--only", multiple=True, type=click.Choice(sorted(BENCHMARKS)), help="Run only these."
)
@click.option("--quick", is_flag=True, help="Smaller inputs, for a smoke run.")
def main(out: Path, markdown_from: Path | None, only: tuple[str, ...], quick: bool) -> None:
    """Run the benchmarks and write their results as JSON."""
    if markdown_from is not None:
        click.echo(markdown(json.loads(markdown_from.read_text())), nl=False)
        return
    console = Console(stderr=True)
    results: dict[str, Any] = {
        "recorded_at": datetime.now(UTC).isoformat(),
        "machine": machine(),
        "command": "make bench" + (" (quick)" if quick else ""),
        "results": {},
    }
    for name, bench in BENCHMARKS.items():
        if only and name not in only:
            continue
        console.print(f"running {name}…")
        results["results"][name] = bench(quick)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    table = Table(title=f"receipts {__version__} benchmarks ({results['machine']['cpus']} cpus)")
    for column in ("measure", "value", "ratio"):
        table.add_column(column)
    for name, result in results["results"].items():
        for row in table_rows(name, result):
            table.add_row(*row)
    # Off a terminal (a log, a pipe) rich would wrap at 80 columns.
    Console(width=None if sys.stdout.isatty() else 160).print(table)
    console.print(f"wrote {out}")


if __name__ == "__main__":
    sys.exit(main())
