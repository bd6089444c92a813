"""The single-file verifier runs where receipts is not installed: a fresh virtual
environment with only ``cryptography``, the file `receipts verify-bundle --print-verifier`
prints, a good bundle and every bad one."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from pipelines.proofs.verify_receipt import STEPS
from tests.conftest import cli
from tests.proofs.bad_bundles import bad_files
from tests.proofs.conftest import COMPLAINT, Signed, make_signed_warehouse, prove

QUOTE = "The dealer could not reproduce the fault."


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv without system site-packages, with cryptography alone installed by pip (from
    the wheel cache or the index pip is configured with)."""
    home = tmp_path_factory.mktemp("bare") / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(home)
    python = home / "bin" / "python"
    installed = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "cryptography"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    if installed.returncode != 0:
        pytest.skip(f"cannot install cryptography into a fresh venv: {installed.stderr[-300:]}")
    return python


@pytest.mark.slow
def test_the_printed_verifier_runs_without_receipts(
    bare_python: Path, signed: Signed, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    work = tmp_path / "reader"
    work.mkdir()
    for module in ("receipts", "pipelines", "warehouse"):
        alone = subprocess.run([bare_python, "-c", f"import {module}"], cwd=work,
                               capture_output=True)  # fmt: skip
        assert alone.returncode != 0, f"{module} is importable in the bare venv"
    printed = cli("verify-bundle", "--print-verifier")
    verifier = work / "verify_receipt.py"
    verifier.write_text(printed.stdout, "utf-8")

    assert prove(signed, work / "good.receipt.json", COMPLAINT, QUOTE)[0] == 0
    other = make_signed_warehouse(tmp_path_factory.mktemp("other"), another_log=True)
    assert prove(other, work / "other.receipt.json", COMPLAINT, QUOTE)[0] == 0

    def run(name: str, *args: str) -> tuple[int, dict[str, str], str]:
        done = subprocess.run(
            [bare_python, "-I", verifier, name, "--json", *args],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=60,
        )
        report = json.loads(done.stdout)
        steps = {s["step"]: s["status"] for s in report["steps"]}
        return done.returncode, steps, done.stdout + done.stderr

    code, steps, _ = run("good.receipt.json", "--key", signed.verifier)
    assert (code, steps) == (0, dict.fromkeys(STEPS, "ok"))
    good = (work / "good.receipt.json").read_bytes()
    for name, (data, step) in bad_files(good, (work / "other.receipt.json").read_bytes()).items():
        (work / f"{name}.json").write_bytes(data)
        code, steps, output = run(f"{name}.json")
        assert code == 1 and steps[step] == "failed", (name, output)
        assert "Traceback" not in output
    missing = subprocess.run([bare_python, "-I", verifier, "nothing.json"], cwd=work,
                             capture_output=True, text=True)  # fmt: skip
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert sys.executable != str(bare_python)
