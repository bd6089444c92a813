"""The Go checker of the interop tests: tests/tlog/go, built once per session with Go's
golang.org/x/mod/sumdb/tlog and note (Debian: golang-go, golang-golang-x-mod-dev; `make
go-deps`), offline: GOPATH mode over Debian's source tree, no module proxy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

GO_SOURCE = Path(__file__).parent / "go"
# Where Debian's golang-golang-x-mod-dev puts golang.org/x/mod.
GOPATH = os.environ.get("RECEIPTS_TEST_GOPATH", "/usr/share/gocode")

GoCheck = Callable[[str, dict[str, Any]], dict[str, Any]]


@pytest.fixture(scope="session")
def go_check(tmp_path_factory: pytest.TempPathFactory) -> GoCheck:
    """Run a subcommand of the Go checker on a JSON request; its JSON answer."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("Go is not installed: run `make go-deps` (golang-go, x/mod)")
    binary = tmp_path_factory.mktemp("go") / "tlogcheck"
    env = {
        **os.environ,
        "GO111MODULE": "off",
        "GOPATH": GOPATH,
        "GOPROXY": "off",
        "GOFLAGS": "",
        "CGO_ENABLED": "0",
    }
    built = subprocess.run(
        [go, "build", "-o", str(binary), "."],
        cwd=GO_SOURCE,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, f"building {GO_SOURCE} failed:\n{built.stderr}"

    def run(command: str, request: dict[str, Any]) -> dict[str, Any]:
        done = subprocess.run(
            [str(binary), command],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"tlogcheck {command}: {done.stderr}"
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer

    return run
