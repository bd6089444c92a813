"""``make demo``: the main job on the embedded defaults, offline.

Runs the bundled manifests into a local DuckDB warehouse, twice, and shows the ledger and a
document's history, so a newcomer sees ingest, idempotency and the audit trail work.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pipelines.cli import main as cli_main

MANIFESTS = Path(__file__).resolve().parent.parent / "manifests"


def _run(args: list[str]) -> int:
    click.echo(f"\n$ receipts {' '.join(args)}", err=True)
    try:
        cli_main.main(args, prog_name="receipts", standalone_mode=False)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


@click.command()
@click.option("--warehouse", default="receipts.duckdb", show_default=True)
def demo(warehouse: str) -> None:
    """Ingest the bundled synthetic corpus twice and show what the warehouse recorded."""
    manifest = str(MANIFESTS / "synthetic-smoke.toml")
    steps = [
        ["ingest", manifest, "--warehouse", warehouse],
        ["ingest", manifest, "--warehouse", warehouse],
        ["runs", "--warehouse", warehouse, "--limit", "2"],
        ["history", "synthetic/record/smoke-1", "--warehouse", warehouse],
        ["verify", "--warehouse", warehouse],
    ]
    for args in steps:
        code = _run(args)
        if code != 0:
            sys.exit(code)
    click.echo(f"\nwarehouse: {Path(warehouse).resolve()}", err=True)


if __name__ == "__main__":
    demo()
