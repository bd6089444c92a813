"""Hints name flags that exist, on the command that prints them."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from pipelines.cli import main
from pipelines.cli.hints import applicable, flags_named
from tests.conftest import REPO, cli

PACKAGES = ("pipelines", "sources", "warehouse")
# Flags of other programs that messages name on purpose.
OTHER_PROGRAMS = {
    "--word-diff": "git diff --word-diff, named by the diff renderer",
    "--force-reinstall": "pip install --force-reinstall, for an extension DuckDB refuses",
}
# "receipts CMD [SUB] ... --flag" in a message or template: the command and the flags.
INVOCATION = re.compile(r"receipts((?: [^\s`'\"]+)+)")


def _options(command: click.Command) -> set[str]:
    return {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}


def _commands() -> dict[str, click.Command]:
    """Every command by its path after ``receipts`` (``backfill nhtsa``), the root as ''."""
    found: dict[str, click.Command] = {}

    def walk(path: str, command: click.Command, ctx: click.Context) -> None:
        found[path] = command
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk(f"{path} {name}".strip(), sub, click.Context(sub, info_name=name, parent=ctx))

    walk("", main, click.Context(main, info_name="receipts"))
    return found


def _texts(templates: bool = False) -> Iterator[tuple[str, str]]:
    """Every string of the packages (and their templates: CSS has ``--names`` too), with
    where it is."""
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    yield f"{path.relative_to(REPO)}:{node.lineno}", node.value
        for path in sorted((REPO / package).rglob("*.j2")) if templates else ():
            yield str(path.relative_to(REPO)), path.read_text("utf-8")


def test_every_flag_a_message_names_is_an_option_of_receipts() -> None:
    known = {"--help", *OTHER_PROGRAMS}
    for command in _commands().values():
        known |= _options(command)
    unknown = [
        f"{where}: {flag}"
        for where, text in _texts()
        for flag in flags_named(text)
        if flag not in known
    ]
    assert unknown == []


def test_every_receipts_invocation_in_a_message_names_flags_of_that_command() -> None:
    commands = _commands()
    wrong = []
    checked = 0
    for where, text in _texts(templates=True):
        for found in INVOCATION.finditer(text):
            words = found.group(1).split()
            path = ""
            while words and f"{path} {words[0]}".strip() in commands:
                path = f"{path} {words.pop(0)}".strip()
            if not path:
                continue
            allowed = _options(commands[path]) | _options(main)
            for flag in flags_named(" ".join(words)):
                checked += 1
                if flag not in allowed:
                    wrong.append(f"{where}: `receipts {path}` has no {flag}")
    assert wrong == []
    assert checked >= 3  # the walk found the invocations it is meant to check


def test_a_hint_naming_a_flag_the_command_lacks_is_left_out() -> None:
    hint = "offline? `--replay DIR` serves a session recorded with `--record`"
    ingest = _commands()["ingest"]
    backfill = _commands()["backfill nhtsa"]
    assert applicable(hint, click.Context(ingest, info_name="ingest")) == hint
    assert applicable(hint, click.Context(backfill, info_name="nhtsa")) is None
    both = "set RECEIPTS_DUCKDB_MEMORY_LIMIT=2GB; a backfill also takes --memory-limit"
    assert applicable(both, click.Context(ingest, info_name="ingest")) == (
        "set RECEIPTS_DUCKDB_MEMORY_LIMIT=2GB"
    )
    assert applicable(both, click.Context(backfill, info_name="nhtsa")) == both


@pytest.mark.slow
def test_backfill_that_cannot_download_is_told_what_it_can_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing listens on port 9 (discard): every attempt is refused, as offline.
    monkeypatch.setenv("RECEIPTS_NHTSA_STATIC_URL", "http://127.0.0.1:9")
    result = cli(
        "backfill", "nhtsa", "--file", "https://static.nhtsa.gov/odi/ffdd/cmpl/FLAT_CMPL.zip",
        "--kind", "complaints", "--warehouse", tmp_path / "w.duckdb",
        "--download-dir", tmp_path / "dl",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "--replay" not in result.stderr and "--record" not in result.stderr
    assert "hint: offline or behind a proxy? fetch the file another way" in result.stderr
    assert "--file" in result.stderr.splitlines()[-1]
