"""The benchmark commands the docs give write to ``out/``: none of them (nor ``make bench``)
writes over the committed ``bench/results.json`` the performance page is rendered from."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click

from bench import run
from tests.conftest import REPO

COMMITTED = Path("bench/results.json")


def test_the_default_output_is_under_out() -> None:
    out = next(p for p in run.main.params if p.name == "out")
    assert isinstance(out, click.Option)
    assert Path(str(out.default)) == Path("out/bench/results.json")


def _bench_commands() -> list[list[str]]:
    """Every ``bench.run`` command line of the docs, the README and the Makefile."""
    texts = [REPO / "README.md", REPO / "Makefile", *sorted((REPO / "docs").rglob("*.md"))]
    found = []
    for path in texts:
        for line in path.read_text(encoding="utf-8").splitlines():
            command = line.split("#", 1)[0]
            if re.search(r"-m bench\.run\b", command):
                found.append(shlex.split(command.replace("$(BIN)", ".venv/bin")))
    return found


def test_no_documented_run_writes_the_committed_results() -> None:
    commands = _bench_commands()
    assert len(commands) >= 3  # make bench, --quick, --only
    for words in commands:
        if "--markdown-from" in words:
            continue  # reads a results file, writes nothing
        out = words[words.index("--out") + 1] if "--out" in words else None
        written = Path(out) if out is not None else Path("out/bench/results.json")
        assert written != COMMITTED, words
        assert written.parts[0] == "out", words
