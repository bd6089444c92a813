"""``receipts manifest check``: validate a manifest."""

from __future__ import annotations

from pathlib import Path

import click

from pipelines.cli.common import emit_json, handle_errors, json_option
from pipelines.manifest import load_manifest
from pipelines.visible import visible_cell


# -- manifest ------------------------------------------------------------------------------
@click.group()
def manifest() -> None:
    """Work with manifests (closed-world corpus declarations).

    \b
    Example:
      receipts manifest check manifests/cr-v-aeb.toml
    """


@manifest.command("check")
@click.argument("file", type=click.Path(path_type=Path))
@json_option
@handle_errors
def manifest_check(file: Path, as_json: bool) -> None:
    """Validate FILE; on error print one message naming the entry and field (exit 2).

    \b
    Example:
      receipts manifest check manifests/cr-v-aeb.toml
    """
    loaded = load_manifest(file)
    counts = {source: len(items) for source, items in loaded.entries.items() if items}
    if as_json:
        emit_json(
            {
                "file": str(file),
                "valid": True,
                "corpus": loaded.corpus.name,
                "namespace": loaded.corpus.namespace,
                "entries": counts,
                "manifest_hash": loaded.content_hash,
            }
        )
        return
    listed = ", ".join(f"{n} {s}" for s, n in counts.items())
    click.echo(
        f"{visible_cell(str(file))}: ok — corpus {loaded.corpus.name!r}, "
        f"namespace {loaded.corpus.namespace!r}, {listed}"
    )
