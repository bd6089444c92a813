"""``receipts studio-schema``: the Sanity Studio schema of a corpus's curated documents."""

from __future__ import annotations

from pathlib import Path

import click

from pipelines.cli.common import emit_json, handle_errors, json_option, warehouse_option
from pipelines.manifest import load_manifest
from pipelines.publish.curate import curate_manifest
from pipelines.publish.studio import infer_types, is_editor_file, schema_files
from warehouse.store import Warehouse


@click.command("studio-schema")
@click.argument("manifest_file", metavar="MANIFEST", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Directory for the TypeScript files (one per type, plus index.ts).",
)
@warehouse_option
@json_option
@handle_errors
def studio_schema(manifest_file: Path, out_dir: Path, warehouse: str, as_json: bool) -> None:
    """Write a Sanity Studio schema for MANIFEST's curated documents into --out.

    One TypeScript file per curated _type (defineType / defineField), inferred from the
    documents the pipeline publishes: every field with its type, readOnly where the pipeline
    owns it, provenance grouped and collapsed. index.ts exports `schemaTypes` for the Studio
    config. Fields of your own go in <type>.editor.ts, written once and never overwritten.
    Reads the warehouse only; sends nothing.
    """
    loaded = load_manifest(manifest_file)
    with Warehouse.open(warehouse, read_only=True) as wh:
        documents = [doc.document() for doc in curate_manifest(loaded, wh)]
    if not documents:
        raise click.UsageError(
            f"corpus {loaded.name!r} has no curated documents in {warehouse}; ingest it first"
        )
    types = infer_types(documents)
    out_dir.mkdir(parents=True, exist_ok=True)
    written, kept = [], []
    for name, text in schema_files(types, loaded.name).items():
        path = out_dir / name
        if is_editor_file(name) and path.exists():
            kept.append(name)
            continue
        path.write_text(text, encoding="utf-8")
        written.append(name)
    if as_json:
        emit_json(
            {
                "out": str(out_dir),
                "types": {
                    t.name: {"documents": t.documents, "fields": len(t.fields)} for t in types
                },
                "written": written,
                "kept": kept,
            }
        )
        return
    click.echo(f"studio schema for {loaded.name!r} written to {out_dir}:")
    for t in types:
        click.echo(f"  {t.name}.ts: {len(t.fields)} fields ({t.documents} documents)")
    if kept:
        click.echo(f"  kept your {', '.join(kept)}")


COMMANDS = [studio_schema]
