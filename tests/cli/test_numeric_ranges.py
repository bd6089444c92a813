"""Numeric options and variables are range-checked: a bad number is exit 2, never a run.

``ingest --batch-size 0`` used to run, find every document "gone" in its empty batches and
tombstone the whole corpus (permanent in an append-only store); ``-5`` was an internal error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from pipelines.cli import COMMANDS, main
from tests.conftest import cli, write_manifest

MANIFEST = """
[corpus]
name = "n"
namespace = "n"

[[synthetic]]
name = "a"
count = 5
size = 100
"""


def _commands() -> Iterator[tuple[str, click.Command]]:
    root = click.Context(main, info_name="receipts")
    stack: list[tuple[str, click.Command, click.Context]] = []
    for name in COMMANDS:
        command = main.get_command(root, name)
        assert command is not None
        stack.append((name, command, click.Context(command, info_name=name, parent=root)))
    while stack:
        path, command, ctx = stack.pop()
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                stack.append((f"{path} {name}", sub, click.Context(sub, parent=ctx)))
        else:
            yield path, command


def test_every_numeric_option_of_every_command_has_a_range() -> None:
    unchecked = []
    for path, command in _commands():
        for param in command.params:
            kind = param.type
            if isinstance(kind, click.IntRange | click.FloatRange):
                if kind.min is None and param.callback is None:
                    unchecked.append(f"receipts {path} {param.opts[0]} (no minimum)")
            elif (
                isinstance(kind, click.types.IntParamType | click.types.FloatParamType)
                and param.callback is None
            ):
                unchecked.append(f"receipts {path} {param.opts[0]}")
    assert unchecked == []


@pytest.mark.parametrize("command", ["ingest", "refresh"])
@pytest.mark.parametrize("size", ["0", "-5", "1000001"])
def test_a_batch_size_out_of_range_is_a_usage_error_and_changes_nothing(
    tmp_path: Path, command: str, size: str
) -> None:
    manifest = write_manifest(tmp_path, MANIFEST)
    warehouse = tmp_path / "w.duckdb"
    assert cli("ingest", manifest, "--warehouse", warehouse).exit_code == 0
    result = cli(command, manifest, "--warehouse", warehouse, "--batch-size", size)
    assert result.exit_code == 2, result.output
    assert "--batch-size" in result.stderr and "internal error" not in result.stderr
    listed = cli("ls", "--warehouse", warehouse, "--json")
    documents = json.loads(listed.stdout)
    assert len(documents) == 5
    assert not any(d.get("tombstone") for d in documents)
    assert len(json.loads(cli("runs", "--warehouse", warehouse, "--json").stdout)) == 1


@pytest.mark.parametrize(
    ("command", "option"),
    [("runs", "--limit"), ("pushes", "--limit"), ("show", "--revision")],
)
def test_other_counts_refuse_zero_and_negatives(tmp_path: Path, command: str, option: str) -> None:
    args = [command] + (["synthetic/record/a-1"] if command == "show" else [])
    for bad in ("0", "-1"):
        result = cli(*args, option, bad, "--warehouse", tmp_path / "w.duckdb")
        assert result.exit_code == 2, result.output
        assert option in result.stderr


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("RECEIPTS_LOCK_WAIT", "-1"),
        ("RECEIPTS_LOCK_WAIT", "inf"),
        ("RECEIPTS_GITHUB_MAX_RATE_WAIT", "-3"),
        ("RECEIPTS_GITHUB_MAX_RATE_WAIT", "soon"),
        ("RECEIPTS_NOTIFY_TIMEOUT", "0"),
        ("RECEIPTS_DUCKDB_MEMORY_LIMIT", "0MB"),
    ],
)
def test_a_numeric_variable_out_of_range_is_a_usage_error_naming_it(
    tmp_path: Path, variable: str, value: str
) -> None:
    manifest = write_manifest(tmp_path, MANIFEST)
    result = cli("ingest", manifest, "--warehouse", tmp_path / "w.duckdb", env={variable: value})
    assert result.exit_code == 2, result.output
    assert variable in result.stderr and "expected" in result.stderr
    assert not (tmp_path / "w.duckdb").exists()
