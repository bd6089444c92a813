"""Tables and diffs go through the pager, in colour, when a person reads them on a
terminal; piped, they are written plain and never paged. The terminal is a real
pseudo-terminal, the pager a script that keeps what it was given."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import corpus_fixture as fixture

RECEIPTS = Path(sys.executable).parent / "receipts"
BOLD, GREEN, RED = "\x1b[1m", "\x1b[32m", "\x1b[31m"
POLICY = "github/acme/handbook/docs/policy.md"


@pytest.fixture
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    return fixture.shared(tmp_path_factory)


@pytest.fixture
def pager(tmp_path: Path) -> tuple[str, Path]:
    """A PAGER that writes what it is given to a file."""
    paged = tmp_path / "paged.txt"
    script = tmp_path / "pager.sh"
    script.write_text('#!/bin/sh\ncat > "$1"\n', encoding="utf-8")
    script.chmod(0o755)
    return f"{script} {paged}", paged


def _env(pager_command: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECEIPTS_", "LESS"))}
    return {**env, "PAGER": pager_command, "TERM": "xterm", "RECEIPTS_NOW": fixture.REPORT_TIME}


def on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """Run receipts with stdin and stdout on a pseudo-terminal; what the terminal shows."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(RECEIPTS), *args], stdin=follower, stdout=follower, stderr=subprocess.PIPE, env=env
    )
    os.close(follower)
    shown = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process is done
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    _, errors = process.communicate(timeout=60)
    assert process.returncode == 0, errors
    return shown.decode("utf-8", errors="replace")


@pytest.mark.parametrize(
    ("args", "colour", "expected"),
    [
        (["ls"], BOLD, "nhtsa/complaint/11561423"),
        (["query", "SELECT doc_id FROM documents"], BOLD, "forem/comment/2a4b9"),
        (["diff", POLICY], GREEN, "within 14 days"),
    ],
)
def test_on_a_terminal_output_is_paged_in_colour(
    warehouse: str, pager: tuple[str, Path], args: list[str], colour: str, expected: str
) -> None:
    command, paged = pager
    on_a_terminal([*args, "--warehouse", warehouse], _env(command))
    text = paged.read_text(encoding="utf-8")
    assert expected in text and colour in text
    if args[0] == "diff":
        assert RED in text  # the removed line


@pytest.mark.parametrize(
    "args", [["ls"], ["query", "SELECT doc_id FROM documents"], ["diff", POLICY]]
)
def test_piped_output_is_plain_and_never_paged(
    warehouse: str, pager: tuple[str, Path], args: list[str]
) -> None:
    command, paged = pager
    result = subprocess.run(
        [str(RECEIPTS), *args, "--warehouse", warehouse],
        capture_output=True,
        text=True,
        env=_env(command),
        check=True,
    )
    assert not paged.exists()
    assert "\x1b" not in result.stdout
    assert result.stdout.splitlines()[0]


def test_show_ends_with_a_line_end_on_a_terminal_and_is_verbatim_piped(
    warehouse: str, pager: tuple[str, Path]
) -> None:
    doc_id = "nhtsa/complaint/11561423"  # canonical JSON: no line end of its own
    env = _env(pager[0])
    piped = subprocess.run(
        [str(RECEIPTS), "show", doc_id, "--warehouse", warehouse],
        capture_output=True,
        env=env,
        check=True,
    ).stdout
    assert not piped.endswith(b"\n")
    assert hashlib.sha256(piped).hexdigest().startswith(_hash(warehouse, doc_id))
    shown = on_a_terminal(["show", doc_id, "--warehouse", warehouse], env)
    assert shown.endswith("}\r\n")  # the terminal's line end (ONLCR) after the bytes


def _hash(warehouse: str, doc_id: str) -> str:
    listed = subprocess.run(
        [str(RECEIPTS), "ls", "--warehouse", warehouse, "--nl"],
        capture_output=True,
        text=True,
        check=True,
        env=_env("cat"),
    ).stdout
    return next(
        json.loads(line)["content_hash"]
        for line in listed.splitlines()
        if json.loads(line)["doc_id"] == doc_id
    )
