"""A PostgreSQL cluster of one test module's own, on its own loopback port, in a temporary
folder: made with ``initdb`` and run with ``pg_ctl`` as the ``postgres`` user (PostgreSQL
refuses to run as root), so that a test can stop it mid-run and start it again without
touching the machine's server."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.s3_server import free_port


def _bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def available() -> str | None:
    """Why a cluster cannot be made here, or None when it can."""
    if _bin("initdb") is None or _bin("pg_ctl") is None:
        return "needs PostgreSQL's initdb and pg_ctl"
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        return "needs root (runuser to the postgres user)"
    return None


class PgCluster:
    def __init__(self) -> None:
        # A folder of its own under the system's temporary folder: the postgres user cannot
        # enter root's (pytest's tmp_path is under a folder only root may enter).
        self.folder = Path(tempfile.mkdtemp(prefix="receipts-test-pg-"))
        self.data = self.folder / "data"
        self.port = free_port()
        shutil.chown(self.folder, "postgres", "postgres")
        self._as_postgres(_bin("initdb"), "-A", "trust", "-U", "postgres", "-D", self.data)
        self.start()

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres"

    def _as_postgres(self, *argv: object) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", *map(str, argv)],
            check=True,
            capture_output=True,
            timeout=120,
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1"
        self._as_postgres(
            _bin("pg_ctl"), "-D", self.data, "-o", options, "-l", self.folder / "log", "-w", "start"
        )

    def stop(self, mode: str = "fast") -> None:
        self._as_postgres(_bin("pg_ctl"), "-D", self.data, "-m", mode, "-w", "stop")

    def remove(self) -> None:
        """Stop the cluster (if running) and delete its folder."""
        subprocess.run(
            [
                "runuser",
                "-u",
                "postgres",
                "--",
                str(_bin("pg_ctl")),
                "-D",
                str(self.data),
                "-m",
                "immediate",
                "stop",
            ],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(self.folder, ignore_errors=True)

    def create_database(self, name: str) -> str:
        subprocess.run(
            [
                "psql",
                f"{self.dsn} dbname=postgres",
                "-v",
                "ON_ERROR_STOP=1",
                "-Atc",
                f'CREATE DATABASE "{name}"',
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        return f"dbname={name} {self.dsn}"
