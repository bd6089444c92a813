"""A global option given after the command is refused naming where it goes."""

from __future__ import annotations

import pytest

from tests.conftest import cli


@pytest.mark.parametrize(
    ("args", "option", "command"),
    [
        (["refresh", "m.toml", "-q"], "-q", "refresh"),
        (["runs", "--verbose"], "--verbose", "runs"),
        (["ls", "--debug"], "--debug", "ls"),
        (["backfill", "nhtsa", "--quiet"], "--quiet", "nhtsa"),
        (["runs", "--log-format", "json"], "--log-format", "runs"),
    ],
)
def test_a_global_option_after_the_command_says_where_it_goes(
    args: list[str], option: str, command: str
) -> None:
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert (
        f"{option} is an option of receipts itself, not of `{command}`: give it before the "
        f"command, e.g. `receipts {option} {command} ...`"
    ) in result.stderr


def test_an_option_no_command_has_is_still_no_such_option() -> None:
    result = cli("runs", "--frobnicate")
    assert result.exit_code == 2
    assert "No such option '--frobnicate'" in result.stderr


def test_before_the_command_it_works() -> None:
    result = cli("-q", "runs", "--warehouse", "/nonexistent/w.duckdb")
    assert result.exit_code == 1 and "no warehouse at" in result.stderr
