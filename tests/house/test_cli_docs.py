"""Docs that cannot drift: every command of the CLI has help text, every option is explained,
every command is in the generated reference and in the hand-written commands overview, and
every flag an example in the docs or the README gives is one its command takes."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import click
import pytest

from docs.hooks.cli_reference import MARKER, reference
from docs.hooks.table_pipes import unescape
from pipelines.cli import main
from tests.conftest import REPO, cli

DOCS = REPO / "docs"


def walk(group: click.Group, prefix: str = "receipts") -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        path = f"{prefix} {name}"
        yield path, command
        if isinstance(command, click.Group):
            yield from walk(command, path)


COMMANDS = dict(walk(main))


def mentions(text: str, path: str) -> bool:
    # the whole command name: `receipts verify` is not found inside `receipts verify-quote`
    return re.search(rf"{re.escape(path)}(?![\w-])", text) is not None


def test_the_walk_finds_nested_commands() -> None:
    assert "receipts manifest check" in COMMANDS
    assert {"receipts drift", "receipts diff", "receipts as-of", "receipts verify-quote"} <= set(
        COMMANDS
    )


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_command_has_help_text(path: str) -> None:
    command = COMMANDS[path]
    assert (command.help or "").strip(), f"{path} has no help text"
    result = cli(*path.split()[1:], "--help")
    assert result.exit_code == 0
    assert (command.help or "").split("\n")[0].strip()[:40] in " ".join(result.stdout.split())


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_option_is_explained(path: str) -> None:
    for param in COMMANDS[path].params:
        if isinstance(param, click.Option) and param.name not in ("help", "version"):
            assert (param.help or "").strip(), f"{path} {param.opts[0]} has no help text"


# -- the generated reference (docs/cli.md) ----------------------------------------------------
REFERENCE = reference()


def test_the_reference_page_is_only_its_marker_and_an_introduction() -> None:
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert MARKER in page
    assert "```" not in page and "## `receipts" not in page, "cli.md holds generated text"


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_command_is_in_the_generated_reference(path: str) -> None:
    assert f"\n## `{path}`\n" in REFERENCE, f"the reference lacks `{path}`"
    help_text = cli(*path.split()[1:], "--help").stdout
    usage = "Usage: receipts" + help_text.splitlines()[0].removeprefix("Usage: main")
    assert usage in REFERENCE, usage
    for param in COMMANDS[path].params:
        if isinstance(param, click.Option):
            assert param.opts[-1] in REFERENCE.split(f"\n## `{path}`\n", 1)[1], param.opts


def test_a_pipe_escaped_for_github_shows_as_a_pipe_in_a_table_code_span() -> None:
    page = "| `a [--json\\|--nl]` | b \\| c |\n```\n| `x\\|y` |\n```\n`p\\|q`"
    assert unescape(page) == "| `a [--json|--nl]` | b \\| c |\n```\n| `x\\|y` |\n```\n`p\\|q`"


# -- the hand-written pages -----------------------------------------------------------------
@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_command_is_in_the_commands_overview(path: str) -> None:
    overview = (DOCS / "commands.md").read_text(encoding="utf-8")
    assert mentions(overview, path), f"docs/commands.md lacks `{path}`"


def test_the_readme_links_every_page_of_the_site() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    pages = re.findall(r":\s+(\S+\.md)\s*$", nav, re.M)
    assert len(pages) >= 15
    for page in pages:
        if page != "index.md":
            assert f"(docs/{page})" in readme, f"README.md does not link docs/{page}"


# -- examples: every flag they give exists ----------------------------------------------------
GLOBAL_ONLY = {"--warehouse", "--data-path"}  # options of main that take a value
GLOBAL = {opt for param in main.params for opt in param.opts}


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def examples(text: str) -> Iterator[str]:
    """Every ``receipts ...`` in a code span or a code line: what follows it up to the end of
    the span or the line."""
    for match in re.finditer(r"(?:^|(?<=[\s`/$]))receipts( [^`\n]*)", text, re.M):
        yield match.group(1)


def command_of(words: list[str]) -> tuple[str, click.Command] | None:
    """The command an example names (after any global options), or None for prose."""
    command: click.Command = main
    path = "receipts"
    i = 0
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in GLOBAL_ONLY else 1
    while i < len(words) and isinstance(command, click.Group):
        sub = command.get_command(click.Context(command), words[i])
        if sub is None:
            break
        command, path, i = sub, f"{path} {words[i]}", i + 1
    return None if command is main else (path, command)


def test_every_flag_an_example_gives_is_one_its_command_takes() -> None:
    checked, wrong = 0, []
    for document in documents():
        for example in examples(document.read_text(encoding="utf-8")):
            found = command_of(example.split())
            if found is None:
                continue
            path, command = found
            known = {opt for param in command.params for opt in param.opts} | GLOBAL
            for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", example):
                checked += 1
                if flag not in known:
                    wrong.append(f"{document.relative_to(REPO)}: `{path}` has no {flag}")
    assert checked > 100
    assert not wrong, "\n".join(wrong)


# -- one version ------------------------------------------------------------------------------
def test_receipts_version_prints_the_version_of_pyproject() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    result = cli("--version")
    assert result.exit_code == 0
    assert result.stdout.startswith(f"receipts {declared['project']['version']} (DuckDB ")
    assert version("receipts") == declared["project"]["version"]


def test_the_changelog_s_latest_release_is_this_version() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, re.M)
    assert releases and releases[0] == version("receipts"), releases[:2]
    assert releases == sorted(releases, key=lambda r: tuple(map(int, r.split("."))), reverse=True)
