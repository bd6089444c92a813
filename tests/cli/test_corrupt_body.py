"""A compressed body that does not decompress (``Content-Encoding: gzip`` over bad bytes) is
a transient upstream failure: retried under the retry policy, then the entry fails naming
the URL and "corrupt compressed body"; never an internal error.

Such answers happen in the wild: psf/requests#3849 is a server whose gzip body curl and
requests both refuse ("Error -3 while decompressing data: incorrect data check"); httpx
raises ``httpx.DecodingError`` for it (``httpx/_decoders.py``, ``GZipDecoder.decode``).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from fakes.nhtsa import FakeNhtsa, Fault
from tests.conftest import REPO, cli

MANIFEST = REPO / "manifests" / "cr-v-aeb.toml"
PATH = "/recalls/recallsByVehicle"


def corrupt_gzip(fake: FakeNhtsa, times: int) -> None:
    """The next ``times`` answers for the 2018 recalls: gzip whose bytes were mangled."""
    mangled = bytearray(gzip.compress(b'{"Count": 0, "Message": "ok", "results": []}'))
    mangled[12:20] = b"\x00" * 8  # the deflate stream, after the gzip header
    fault = Fault(PATH, 200, times, bytes(mangled), headers={"Content-Encoding": "gzip"})
    fault.when["modelYear"] = "2018"
    fake.faults.append(fault)


def test_a_corrupt_gzip_body_is_retried_then_fails_the_entry_naming_the_url(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    corrupt_gzip(fake_nhtsa, times=10)
    result = cli("ingest", MANIFEST, "--warehouse", warehouse_path)
    assert result.exit_code == 1, result.output
    assert "internal error" not in result.output
    retries = [line for line in result.stderr.splitlines() if ", retry " in line]
    assert len(retries) == 4 and "retry 4/4" in retries[-1]  # the policy's five attempts
    assert all(line.startswith("corrupt compressed body from nhtsa.test") for line in retries)
    [failed] = [line for line in result.stdout.splitlines() if "FAILED" in line]
    assert "corrupt compressed body from https://" in failed and PATH in failed
    assert "modelYear=2018" in failed and "gave up after 5 attempts" in failed
    assert "hint: the upstream (or a proxy on the way) sent a compressed body" in result.stdout

    [run] = json.loads(cli("runs", "--warehouse", warehouse_path, "--json").stdout)
    assert run["status"] == "failed"
    [failure] = run["failures"]
    assert "corrupt compressed body from https://" in failure["reason"]
    assert "internal" not in failure


def test_a_corrupt_gzip_body_once_is_retried_and_the_run_completes(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    corrupt_gzip(fake_nhtsa, times=1)
    result = cli("ingest", MANIFEST, "--warehouse", warehouse_path, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["status"] == "ok"
    assert "corrupt compressed body from" in result.stderr and "retry 1/4" in result.stderr
