"""``receipts studio-schema``: the Sanity Studio schema of a corpus's curated documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from pipelines.cli.common import emit_json, handle_errors, json_option, warehouse_option
from pipelines.manifest import load_manifest
from pipelines.publish.curate import curate_manifest
from pipelines.publish.studio import infer_types, is_editor_file, schema_files
from warehouse.store import Warehouse


@click.command("studio-schema")
@click.argument(
    "manifest_files",
    metavar="MANIFEST...",
    nargs=-1,
    required=True,
    type=click.Path(path_type=Path),
)
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
def studio_schema(
    manifest_files: tuple[Path, ...], out_dir: Path, warehouse: str, as_json: bool
) -> None:
    """Write a Sanity Studio schema for the curated documents of each MANIFEST into --out.

    One TypeScript file per curated _type (defineType / defineField), inferred from the
    documents the pipeline publishes: every field with its type, readOnly where the pipeline
    owns it, provenance grouped and collapsed. index.ts exports `schemaTypes` for the Studio
    config. Fields of your own go in <type>.editor.ts, written once and never overwritten.
    Give every corpus one Studio shows (one dataset) in one call: corpora whose documents
    share a _type get one definition covering them all. Reads the warehouse only; sends
    nothing.

    \b
    Example:
      receipts studio-schema manifests/cr-v-aeb.toml --out studio/schemas
    """
    loaded = [load_manifest(path) for path in manifest_files]
    documents: list[dict[str, Any]] = []
    renamed: dict[str, dict[str, str]] = {}
    with Warehouse.open(warehouse, read_only=True) as wh:
        for manifest in loaded:
            curated = [doc.document() for doc in curate_manifest(manifest, wh)]
            if not curated:
                raise click.UsageError(
                    f"corpus {manifest.name!r} has no curated documents in {warehouse}; "
                    "ingest it first"
                )
            documents.extend(curated)
            for source_type, fields in manifest.publish.fields.items():
                final = manifest.publish.types.get(source_type, source_type)
                renamed.setdefault(final, {}).update(fields)
    types = infer_types(documents, renamed)
    names = ", ".join(manifest.name for manifest in loaded)
    out_dir.mkdir(parents=True, exist_ok=True)
    written, kept = [], []
    for name, text in schema_files(types, names).items():
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
    click.echo(f"studio schema for {names} written to {out_dir}:")
    for t in types:
        click.echo(f"  {t.name}.ts: {len(t.fields)} fields ({t.documents} documents)")
    if kept:
        click.echo(f"  kept your {', '.join(kept)}")
