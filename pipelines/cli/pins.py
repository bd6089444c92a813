"""Commands for pinned GitHub files: ``pin``, ``drift --pins``, and ``verify --upstream``'s
report. Each is a thin layer over ``sources.github.pins``, ``pipelines.checks.pin_drift`` and
``pipelines.checks.upstream_verify``."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import click

from pipelines.checks.pin_drift import pin_drift
from pipelines.checks.upstream_verify import (
    UpstreamReport,
    files_in_warehouse,
    files_of_manifest,
    verify_upstream,
)
from pipelines.cli import exits
from pipelines.cli.common import (
    emit_json,
    handle_errors,
    http_factory,
    http_options,
    json_option,
    quiet,
)
from pipelines.cli.text_table import TextTable
from pipelines.manifest import load_manifest
from pipelines.progress import steps_for
from sources.github.pins import RefResolver, pin_manifest
from sources.github.source import GithubClients
from sources.http import HttpFactory
from warehouse.digests import Progress
from warehouse.errors import ManifestError, ManifestNotPinnable, ReceiptsError, SourceError
from warehouse.store import Warehouse


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Rows as left-aligned columns under a header line, each value as it is, control
    characters written out (:mod:`pipelines.cli.text_table`)."""
    table = TextTable(headers)
    for row in rows:
        table.add(["" if v is None else str(v) for v in row])
    return "\n".join(table.lines())


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "-"


@contextmanager
def github_http(
    record_dir: Path | None = None, replay_dir: Path | None = None
) -> Iterator[HttpFactory]:
    """An HTTP factory for one command (recording or replaying as ``--record`` and
    ``--replay`` ask), closed after it; source errors become CLI errors (a manifest that
    cannot be pinned exits 2, anything else 1)."""
    http = http_factory(record_dir, replay_dir)
    try:
        yield http
    except ManifestNotPinnable as exc:
        raise ManifestError(str(exc)) from None
    except SourceError as exc:
        raise ReceiptsError(str(exc)) from None
    finally:
        http.close()


# -- pin -----------------------------------------------------------------------------------
@click.command()
@click.argument("manifest_file", metavar="MANIFEST", type=click.Path(path_type=Path))
@click.option(
    "--ref",
    default="main",
    show_default=True,
    help="Branch, tag or commit to resolve through the GitHub commits API.",
)
@click.option(
    "--repo",
    "repos",
    multiple=True,
    metavar="OWNER/NAME",
    help="Pin only the entries of this repository (repeatable).",
)
@click.option("--dry-run", is_flag=True, help="Print what would change; leave MANIFEST alone.")
@http_options
@json_option
@handle_errors
def pin(
    manifest_file: Path,
    ref: str,
    repos: tuple[str, ...],
    dry_run: bool,
    record_dir: Path | None,
    replay_dir: Path | None,
    as_json: bool,
) -> None:
    """Resolve --ref to a commit SHA and write it as the `commit` of each [[github]] entry of
    MANIFEST, keeping comments and layout; print what changed.

    Exit 0 when done, 1 when a ref cannot be resolved, 2 when MANIFEST cannot be pinned
    (nothing is written in either case).

    \b
    Example:
      receipts pin manifests/hyphae-atlas.toml --ref main --dry-run
    """
    with github_http(record_dir, replay_dir) as http:
        changes = pin_manifest(
            manifest_file, ref, RefResolver(GithubClients(http)), repos=repos, dry_run=dry_run
        )
    changed = [c for c in changes if c.changed]
    if as_json:
        emit_json(
            {
                "manifest": str(manifest_file),
                "ref": ref,
                "dry_run": dry_run,
                "written": bool(changed) and not dry_run,
                "entries": [c.as_json() for c in changes],
            }
        )
        return
    verb = "would re-pin" if dry_run else "re-pinned"
    click.echo(f"{manifest_file}: {verb} {len(changed)} of {len(changes)} entries at {ref}")
    for change in changes:
        if change.changed:
            click.echo(f"  {change.repo}: {change.old or '(no commit)'} -> {change.new}")
        else:
            click.echo(f"  {change.repo}: already at {change.new}")


# -- drift --pins --------------------------------------------------------------------------
def report_pin_drift(
    pins_manifest: Path,
    ref: str,
    fail_on_drift: bool,
    as_json: bool,
    record_dir: Path | None = None,
    replay_dir: Path | None = None,
) -> None:
    """``receipts drift --pins``: for every pinned file of a manifest, whether it is changed,
    unchanged or deleted at the tracking ref, with the commit the ref points to now."""
    loaded = load_manifest(pins_manifest)
    progress = steps_for("drift --pins: ", quiet=as_json or quiet())
    try:
        with github_http(record_dir, replay_dir) as http:
            report = pin_drift(loaded, http, ref, progress=progress)
    finally:
        progress.close()
    stale = [d for d in report if d.stale]
    if as_json:
        emit_json(
            {"manifest": str(pins_manifest), "ref": ref, "files": [d.as_json() for d in report]}
        )
    else:
        counts: dict[str, int] = {}
        for item in report:
            counts[item.status] = counts.get(item.status, 0) + 1
        summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        click.echo(f"{len(report)} pinned files compared with {ref}: {summary or 'none'}")
        if report:
            click.echo(
                render_table(
                    ["status", "repo", "path", "pinned", "at ref"],
                    [
                        [d.status, d.repo, d.path, _short(d.pinned_commit), _short(d.ref_commit)]
                        for d in report
                    ],
                )
            )
        if stale:
            click.echo(
                f"{len(stale)} pins are stale: `receipts pin MANIFEST --ref {ref}` moves them"
            )
    sys.exit(exits.for_drift(bool(stale), fail_on_drift))


# -- verify --upstream ---------------------------------------------------------------------
def upstream_report(
    warehouse: Warehouse,
    manifest_file: str | None,
    *,
    record_dir: Path | None = None,
    replay_dir: Path | None = None,
    progress: Progress | None = None,
) -> UpstreamReport:
    """``verify --upstream [MANIFEST]``: the pinned files of MANIFEST, or every GitHub file
    the warehouse holds, re-downloaded and compared with their stored digests."""
    files = (
        files_of_manifest(load_manifest(manifest_file))
        if manifest_file
        else files_in_warehouse(warehouse)
    )
    with github_http(record_dir, replay_dir) as http:
        return verify_upstream(warehouse, files, http, progress=progress)


def render_upstream(report: UpstreamReport) -> str:
    lines = [
        f"re-downloaded {len(report.checks)} pinned files: "
        f"{len(report.checks) - len(report.failures)} match, {len(report.failures)} do not"
    ]
    if report.failures:
        lines.append(
            render_table(
                ["status", "doc_id", "commit", "stored", "upstream", "detail"],
                [
                    [
                        c.status,
                        c.file.doc_id,
                        _short(c.file.commit),
                        _short(c.stored_sha256),
                        _short(c.upstream_sha256),
                        c.detail or "",
                    ]
                    for c in report.failures
                ],
            )
        )
    return "\n".join(lines)
