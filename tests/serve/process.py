"""``receipts serve`` as a process on a free port (``--port 0``): started, waited for until
its stderr line names the address, and stopped with Ctrl-C."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tests.conftest import REPO

_ADDRESS = re.compile(r"at (http://127\.0\.0\.1:\d+)/")


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    first_line: str


@contextmanager
def serving(warehouse: str, *args: str) -> Iterator[Served]:
    command = [sys.executable, "-m", "pipelines.cli", "serve", "--warehouse", warehouse]
    process = subprocess.Popen(
        [*command, "--port", "0", *args],
        cwd=REPO,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = _ADDRESS.search(line)
        assert found, f"no address on stderr: {line!r}"
        yield Served(process, found.group(1), line)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stderr is not None:
            process.stderr.close()
