"""Helpers of the DuckLake tests: fresh PostgreSQL databases for catalogs, and receipts as a
real process on any warehouse."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
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


PG_BIN = Path("/usr/lib/postgresql/15/bin")


class PrivateCluster:
    """A PostgreSQL cluster of a test's own, on its own port: a catalog the test can stop
    (``pg_ctl stop -m immediate``, as a crash or a power cut would) and start again.
    Run as the ``postgres`` user (PostgreSQL refuses root), in a folder of its own."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="receipts-pg-"))
        shutil.chown(self.folder, "postgres")
        self.port = _free_port()
        self._as_postgres("initdb", "-D", self.folder / "data", "-A", "trust", "-U", "postgres")

    @staticmethod
    def available() -> bool:
        return os.geteuid() == 0 and (PG_BIN / "initdb").exists() and bool(shutil.which("runuser"))

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres"

    def _as_postgres(self, tool: str, *args: object) -> None:
        argv = ["runuser", "-u", "postgres", "--", str(PG_BIN / tool), *map(str, args)]
        subprocess.run(argv, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1"
        data, log = self.folder / "data", self.folder / "log"
        self._as_postgres("pg_ctl", "-D", data, "-o", options, "-l", log, "-w", "start")

    def stop(self) -> None:
        """Stopped at once: every connection cut, as if the server had crashed."""
        self._as_postgres("pg_ctl", "-D", self.folder / "data", "-m", "immediate", "-w", "stop")

    def create_database(self, name: str) -> None:
        psql(self.dsn, f'CREATE DATABASE "{name}"')

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
