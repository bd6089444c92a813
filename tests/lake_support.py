"""Helpers of the DuckLake tests: fresh PostgreSQL databases for catalogs, and receipts as a
real process on any warehouse."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def psql(dsn: str, sql: str) -> str:
    """Run one statement on the PostgreSQL server of ``dsn`` (database ``postgres``)."""
    done = subprocess.run(
        ["psql", f"{dsn} dbname=postgres", "-v", "ON_ERROR_STOP=1", "-Atc", sql],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"psql failed: {done.stderr.strip()}")
    return done.stdout


class PostgresDatabases:
    """Databases made for one test session, named after it; all dropped at its end."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.prefix = f"receipts_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        self.made: list[str] = []

    def create(self) -> str:
        name = f"{self.prefix}_{len(self.made)}"
        psql(self.dsn, f'CREATE DATABASE "{name}"')
        self.made.append(name)
        return name

    def drop_all(self) -> None:
        for name in self.made:
            psql(self.dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.made.clear()


def receipts_argv(*args: object) -> list[str]:
    """The receipts command line (with ``[[synthetic]]`` registered) as a process."""
    return [sys.executable, "-m", "bench.synthetic_source", *map(str, args)]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECEIPTS_")}
    env.update(extra)
    return env


def start(*args: object, wait: float = 0) -> subprocess.Popen[str]:
    """The receipts command line as a running process, its output piped; ``wait``: how long
    it may wait for a warehouse another process holds (``RECEIPTS_LOCK_WAIT``)."""
    return subprocess.Popen(
        receipts_argv(*args),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(RECEIPTS_LOCK_WAIT=str(wait)),
    )
