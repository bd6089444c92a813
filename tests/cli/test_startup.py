"""Start-up: ``receipts --version``, ``--help`` and completing a command's name import no
command module (so neither DuckDB, httpx nor pyarrow); every command is one line of a table."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
from importlib import metadata

import click
import pytest

import pipelines.cli
from pipelines.cli import COMMANDS, main
from tests.conftest import REPO, cli
from warehouse.schema import migrations

HEAVY = ("duckdb", "httpx", "pyarrow", "pydantic", "rich", "jinja2", "apprise", "orjson")

_PROBE = """
import sys
from pipelines.cli import main
try:
    main(sys.argv[1:], prog_name="receipts")
except SystemExit:
    pass
print("MODULES " + " ".join(sorted(sys.modules)), file=sys.stderr)
"""


def _run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _modules_after(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    done = _run(args, env)
    [line] = [ln for ln in done.stderr.splitlines() if ln.startswith("MODULES ")]
    return set(line.split()[1:])


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--version"], None),
        (["--help"], None),
        (
            [],
            {
                "_RECEIPTS_COMPLETE": "bash_complete",
                "COMP_WORDS": "receipts ver",
                "COMP_CWORD": "1",
            },
        ),
    ],
    ids=["version", "help", "completion"],
)
def test_start_up_imports_no_heavy_module(args: list[str], env: dict[str, str] | None) -> None:
    loaded = _modules_after(args, env)
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    assert heavy == []
    commands = sorted(m for m in loaded if m.startswith("pipelines.cli.") and m.split(".")[-1] in {
        entry.where.split(":")[0] for entry in COMMANDS.values()
    })  # fmt: skip
    assert commands == []


def test_a_command_imports_its_module_when_it_runs() -> None:
    loaded = _modules_after(["runs", "--help"])
    assert "pipelines.cli.ledger" in loaded and "pipelines.cli.backfill" not in loaded


def test_version_names_duckdb_and_the_schema_it_writes() -> None:
    result = cli("--version")
    assert result.exit_code == 0
    newest = max(m.version for m in migrations())
    assert result.stdout == (
        f"receipts {metadata.version('receipts')} (DuckDB {metadata.version('duckdb')}, "
        f"warehouse schema {newest})\n"
    )


def test_completion_lists_command_names_from_the_table() -> None:
    env = {"_RECEIPTS_COMPLETE": "bash_complete", "COMP_WORDS": "receipts ver", "COMP_CWORD": "1"}
    done = _run([], env)
    names = [line.split(",", 1)[1] for line in done.stdout.splitlines()]
    assert names == ["verify", "verify-bundle", "verify-claims", "verify-quote"]


def test_help_lists_every_command_with_its_line_of_the_table() -> None:
    result = cli("--help")
    assert result.exit_code == 0
    for name, entry in COMMANDS.items():
        assert f"  {name} " in result.stdout
        command = main.get_command(click.Context(main), name)
        assert command is not None and command.get_short_help_str(200) == entry.summary
        assert cli(name, "--help").exit_code == 0, name


def test_every_command_of_the_cli_modules_is_in_the_table() -> None:
    """A command defined in pipelines/cli/ and in no group is reachable only through the
    table: adding one is adding its line."""
    commands: dict[int, str] = {}
    nested: set[int] = set()
    for info in pkgutil.iter_modules(pipelines.cli.__path__):
        if info.name == "__main__":
            continue
        module = importlib.import_module(f"pipelines.cli.{info.name}")
        for attribute, value in vars(module).items():
            if isinstance(value, click.Command) and value is not main:
                commands[id(value)] = f"{info.name}:{attribute}"
                if isinstance(value, click.Group):
                    nested.update(id(sub) for sub in value.commands.values())
    listed = {entry.where for entry in COMMANDS.values()}
    # A command imported into another module is found there too: compare the objects.
    by_object = {
        id(getattr(importlib.import_module(f"pipelines.cli.{w.split(':')[0]}"), w.split(":")[1]))
        for w in listed
    }
    missing = sorted(w for key, w in commands.items() if key not in nested and key not in by_object)
    assert missing == [], f"not in pipelines/cli/__init__.py's COMMANDS: {missing}"
