"""The scheduling examples the operations page includes (``docs/examples/``) work as written:
the systemd units pass ``systemd-analyze verify``, the crontab line is five time fields and a
command, and every ``receipts`` invocation they run parses with the options it gives.

``systemd-analyze verify`` loads the units offline and warns about misspelt directives and
unknown sections and fails on non-executable commands (the tool's introduction,
systemd commit 8b835fccdad78d89f9cc64f9b02059fb75ffbab1 "systemd-verify: a simple tool for
offline unit verification", merged into systemd-analyze by 1d3bc0177a19; systemd-analyze(1)).
A misspelt key is only a warning (exit 0), so the test wants no output at all. The verify
runs on a copy whose ``ExecStart=`` binary is this checkout's ``receipts``, the only change.
The crontab format is crontab(5): five time fields, then the command run by ``/bin/sh``.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, cli

EXAMPLES = REPO / "docs" / "examples"
SERVICE = EXAMPLES / "receipts-refresh.service"
TIMER = EXAMPLES / "receipts-refresh.timer"
CRONTAB = EXAMPLES / "crontab"
ENV_FILE = EXAMPLES / "receipts.env"
INSTALLED = "/srv/receipts/.venv/bin/receipts"  # where the examples expect the tool
RECEIPTS = Path(sys.executable).with_name("receipts")

# crontab(5): minute, hour, day of month, month, day of week; each a list of ranges/steps
# of numbers or *, months and days also by name.
FIELD = (
    r"(\*|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?(,(\*|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?)*"
)
CRON_LINE = re.compile(rf"^(?P<when>({FIELD})(\s+({FIELD})){{4}})\s+(?P<command>\S.*)$")


def receipts_args(command: str) -> list[str]:
    """The arguments of the ``receipts`` invocation in a shell command line: the ``&&``-joined
    part that runs ``…/bin/receipts``, without its output redirections."""
    [words] = [
        w for w in (shlex.split(p) for p in command.split("&&")) if w[0].endswith("bin/receipts")
    ]
    kept: list[str] = []
    skip = False
    for word in words[1:]:
        if skip:
            skip = False
        elif word in (">", ">>", "2>", "2>>", "<"):
            skip = True
        elif not re.match(r"^\d*(>>?|<)", word):
            kept.append(word)
    return kept


def assert_parses(args: list[str]) -> None:
    """The invocation's options all exist: with ``--help`` appended click parses every
    option (an unknown one is exit 2) and then shows the command's help instead of running."""
    result = cli(*args, "--help")
    assert result.exit_code == 0, (args, result.output)
    assert result.stdout.startswith("Usage: "), result.output


def exec_start(unit: str) -> str:
    [line] = [ln for ln in unit.splitlines() if ln.startswith("ExecStart=")]
    return line.removeprefix("ExecStart=")


def test_the_service_runs_a_receipts_command_that_parses() -> None:
    command = exec_start(SERVICE.read_text())
    assert command.startswith(f"{INSTALLED} ")
    args = receipts_args(command)
    assert args[:3] == ["--log-format", "json", "refresh"]
    assert_parses(args)
    assert "EnvironmentFile=/etc/receipts.env" in SERVICE.read_text().splitlines()


def test_the_unit_files_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze") or (
        "/usr/bin/systemd-analyze" if Path("/usr/bin/systemd-analyze").exists() else None
    )
    if analyze is None:
        pytest.skip("systemd-analyze is not installed: `systemd-analyze verify` cannot run")
    assert RECEIPTS.exists(), RECEIPTS
    service = SERVICE.read_text()
    assert service.count(INSTALLED) == 1
    (tmp_path / SERVICE.name).write_text(service.replace(INSTALLED, str(RECEIPTS)))
    shutil.copy(TIMER, tmp_path / TIMER.name)
    result = subprocess.run(
        [analyze, "verify", "--man=no", SERVICE.name, TIMER.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    # verify exits 0 on an unknown key, only saying so: any word from it is a failure too
    assert result.returncode == 0, result.stderr
    assert result.stdout + result.stderr == ""


def test_verify_would_fail_a_broken_unit(tmp_path: Path) -> None:
    """The check above can fail: an ExecStart that is not there is refused."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed: `systemd-analyze verify` cannot run")
    (tmp_path / SERVICE.name).write_text(SERVICE.read_text())  # /srv/receipts is not here
    result = subprocess.run(
        [analyze, "verify", "--man=no", SERVICE.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0 and "not executable" in result.stderr


def test_the_crontab_line_is_five_fields_and_a_receipts_command_that_parses() -> None:
    lines = [ln for ln in CRONTAB.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    [line] = lines
    match = CRON_LINE.match(line)
    assert match, line
    assert match["when"].split() == ["0", "3", "*", "*", "*"]
    command = match["command"]
    assert ". /etc/receipts.env" in command and "set -a" in command
    args = receipts_args(command)
    assert args[:3] == ["--log-format", "json", "refresh"]
    assert_parses(args)


def test_the_environment_file_is_name_value_lines_with_the_notify_urls() -> None:
    """What systemd's EnvironmentFile= and ``sh``'s ``.`` both read: NAME=VALUE lines."""
    names = []
    for line in ENV_FILE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, sep, value = line.partition("=")
            assert sep and re.fullmatch(r"[A-Z_][A-Z0-9_]*", name) and " " not in value, line
            names.append(name)
    assert "RECEIPTS_NOTIFY" in names
