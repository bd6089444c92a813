"""``receipts ingest``: fetch every entry of a manifest into the warehouse."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pipelines.cli import exits
from pipelines.cli.common import (
    emit_json,
    handle_errors,
    ingest_options,
    json_option,
    prepare_ingest,
    print_run,
    quiet,
    warehouse_option,
)
from pipelines.cli.observing import (
    finished_at,
    observe_options,
    observe_run,
    started_at,
    with_observed,
)
from pipelines.ingest import run_ingest
from pipelines.observe.report import from_ingest
from pipelines.progress import reporter_for
from warehouse.store import Warehouse


# -- ingest --------------------------------------------------------------------------------
@click.command()
@click.argument("manifest_file", metavar="MANIFEST", type=click.Path(path_type=Path))
@warehouse_option
@ingest_options
@observe_options
@json_option
@handle_errors
def ingest(
    manifest_file: Path,
    warehouse: str,
    only: tuple[str, ...],
    allow_mass_retire: bool,
    record_dir: Path | None,
    replay_dir: Path | None,
    batch_size: int,
    as_json: bool,
) -> None:
    """Fetch every entry of MANIFEST into the warehouse and print the run summary.

    Exit 0 when every entry succeeded, 1 when any failed (the others still commit), 2 for a
    bad manifest or usage.

    \b
    Examples:
      receipts ingest manifests/cr-v-aeb.toml
      receipts ingest manifests/hyphae-atlas.toml --only github --record out/evidence
    """
    loaded, http, options = prepare_ingest(
        manifest_file, only, allow_mass_retire, record_dir, replay_dir, batch_size
    )
    with Warehouse.open(warehouse) as wh:
        try:
            result = run_ingest(
                loaded,
                wh,
                http=http,
                options=options,
                reporter=reporter_for(quiet=as_json or quiet()),
            )
        finally:
            http.close()
        observed = observe_run(
            from_ingest(result, loaded.name, started_at(), finished_at(), http.retries_made),
            loaded,
            wh,
        )
    if as_json:
        emit_json(with_observed(result.as_json(), observed))
    else:
        print_run(result)
    sys.exit(exits.for_check(result.status == "ok"))
