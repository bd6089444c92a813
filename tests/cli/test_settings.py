"""Settings: one typed model for every variable, a config file, a secrets file kept apart,
and one table of them in the docs generated from the model."""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest

from docs.hooks import settings_table
from pipelines.publish.targets.sanity_http import SanitySettings
from tests.conftest import cli, write_manifest
from warehouse import settings

MANIFEST = """
[corpus]
name = "s"
namespace = "s"

[[synthetic]]
name = "a"
count = 2
size = 100
"""


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory of its own (where ``receipts.toml`` is looked for)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _runs(*args: object, env: dict[str, str] | None = None) -> list[dict[str, object]]:
    result = cli("runs", "--json", *args, env=env)
    assert result.exit_code == 0, result.output
    value: list[dict[str, object]] = json.loads(result.stdout)
    return value


# -- bad values -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("variable", "value", "accepts"),
    [
        ("RECEIPTS_NOW", "yesterday", "ISO-8601"),
        ("RECEIPTS_DUCKDB_MEMORY_LIMIT", "lots", "a size of 16MB or more"),
        ("RECEIPTS_LOCK_WAIT", "soon", "seconds, 0 or more"),
        ("RECEIPTS_NHTSA_URL", "api.nhtsa.gov", "an http(s):// URL"),
        ("RECEIPTS_LOG_FORMAT", "yaml", "json"),
        ("RECEIPTS_DUCKDB_THREADS", "0", "a whole number, 1 or more"),
    ],
)
def test_a_bad_variable_is_exit_2_naming_it_and_what_it_accepts(
    here: Path, variable: str, value: str, accepts: str
) -> None:
    manifest = write_manifest(here, MANIFEST)
    result = cli("ingest", manifest, env={variable: value})
    assert result.exit_code == 2, result.output
    assert variable in result.stderr and accepts in result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.output
    assert not (here / "receipts.duckdb").exists()


def test_a_bad_config_value_names_the_file_and_key(here: Path) -> None:
    (here / "receipts.toml").write_text('duckdb_memory_limit = "lots"\n')
    result = cli("runs")
    assert result.exit_code == 2, result.output
    assert "duckdb_memory_limit in receipts.toml='lots' is not accepted" in result.stderr


def test_an_unknown_config_key_lists_the_valid_ones(here: Path) -> None:
    (here / "receipts.toml").write_text('warehous = "x.duckdb"\n')
    result = cli("runs")
    assert result.exit_code == 2
    assert (
        "unknown key(s) 'warehous'" in result.stderr and "valid keys: warehouse," in result.stderr
    )


def test_a_config_file_that_is_not_toml_is_exit_2(here: Path) -> None:
    (here / "receipts.toml").write_text("warehouse = \n")
    result = cli("runs")
    assert result.exit_code == 2 and "is not valid TOML" in result.stderr


# -- the config file and precedence ------------------------------------------------------------
def test_the_working_directorys_receipts_toml_chooses_the_warehouse_and_the_clock(
    here: Path,
) -> None:
    (here / "receipts.toml").write_text(
        'warehouse = "configured.duckdb"\nnow = "2030-01-02T03:04:05Z"\n'
    )
    manifest = write_manifest(here, MANIFEST)
    assert cli("ingest", manifest).exit_code == 0
    assert (here / "configured.duckdb").exists() and not (here / "receipts.duckdb").exists()
    [run] = _runs()
    assert str(run["started_at"]).startswith("2030-01-02")


def test_option_beats_environment_beats_config_file_beats_default(
    here: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    manifest = write_manifest(here, MANIFEST)
    for name in ("from-file", "from-env", "from-option"):
        assert cli("ingest", manifest, "--warehouse", f"{name}.duckdb").exit_code == 0
    assert cli("ingest", manifest, "--warehouse", "from-option.duckdb").exit_code == 0
    assert cli("ingest", manifest, "--warehouse", "from-env.duckdb").exit_code == 0
    assert cli("ingest", manifest, "--warehouse", "from-env.duckdb").exit_code == 0
    # Runs per warehouse: file 1, option 2, env 3: the count says which was read.
    elsewhere = tmp_path_factory.mktemp("cfg") / "other.toml"
    elsewhere.write_text('warehouse = "from-file.duckdb"\n')
    env = {"RECEIPTS_CONFIG": str(elsewhere)}
    assert len(_runs(env=env)) == 1
    assert len(_runs(env={**env, "RECEIPTS_WAREHOUSE": "from-env.duckdb"})) == 3
    option = ("--warehouse", "from-option.duckdb")
    assert len(_runs(*option, env={**env, "RECEIPTS_WAREHOUSE": "from-env.duckdb"})) == 2
    # --config (before the command) names the file too; without any, the default.
    assert len(json.loads(cli("--config", elsewhere, "runs", "--json").stdout)) == 1
    result = cli("runs")
    assert result.exit_code == 1 and "no warehouse at receipts.duckdb" in result.stderr


def test_config_names_the_log_format(here: Path) -> None:
    (here / "receipts.toml").write_text('log_format = "json"\n')
    result = cli("runs")
    assert result.exit_code == 1
    line = json.loads(result.stderr.strip().splitlines()[-1])
    assert line["level"] == "error" and "no warehouse" in line["message"]


# -- secrets ---------------------------------------------------------------------------------
def test_a_secrets_file_others_can_read_is_refused_naming_the_chmod(here: Path) -> None:
    (here / "receipts.toml").write_text('sanity_project_id = "proj"\n')
    secrets = here / "secrets.toml"
    secrets.write_text('sanity_token = "sk-secret-value-0123456789"\n')
    secrets.chmod(0o644)
    result = cli("runs")
    assert result.exit_code == 2
    assert "run `chmod 600 secrets.toml`" in result.stderr
    assert "sk-secret-value" not in result.output


def test_a_token_in_the_config_file_is_refused(here: Path) -> None:
    (here / "receipts.toml").write_text('github_token = "ghp_not_here_0123456789"\n')
    result = cli("runs")
    assert result.exit_code == 2
    assert "tokens go in the environment or a secrets file" in result.stderr
    assert "ghp_not_here" not in result.output


def test_a_private_secrets_file_completes_the_sanity_settings(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (here / "receipts.toml").write_text(
        'sanity_project_id = "proj"\nsanity_dataset = "production"\n'
    )
    manifest = write_manifest(here, MANIFEST)
    half = cli("publish", manifest)
    assert half.exit_code == 2 and "SANITY_TOKEN not" in half.stderr
    secrets = here / "secrets.toml"
    secrets.write_text('sanity_token = "sk-from-the-secrets-file-0123456789"\n')
    secrets.chmod(0o600)
    configured = SanitySettings.from_env()
    assert configured is not None and configured.token.startswith("sk-from-the-secrets")
    # The environment wins over the file.
    monkeypatch.setenv("SANITY_TOKEN", "sk-from-the-environment-0123456789")
    again = SanitySettings.from_env()
    assert again is not None and again.token.startswith("sk-from-the-environment")
    assert "sk-" not in repr(settings.secrets())


# -- the documentation ------------------------------------------------------------------------
def test_the_docs_table_is_the_settings_model() -> None:
    page = settings_table.PAGE.read_text("utf-8")
    assert settings_table.block(page) == settings_table.table(), (
        "docs/configuration.md's table differs from warehouse/settings.py: run "
        "`python -m docs.hooks.settings_table`"
    )


def test_every_variable_the_code_reads_is_in_the_model() -> None:
    """Every ``RECEIPTS_*`` name in the packages is a setting (or names the files)."""
    root = Path(__file__).resolve().parents[2]
    named: set[str] = set()
    for package in ("pipelines", "sources", "warehouse"):
        for path in (root / package).rglob("*.py"):
            named.update(re.findall(r"\bRECEIPTS_[A-Z_]+[A-Z]\b", path.read_text("utf-8")))
    known = {row["variable"] for row in settings.rows()}
    assert named - known == set()
    assert os.environ.get("RECEIPTS_CONFIG") is None


def test_only_the_settings_modules_read_the_environment() -> None:
    """Every other module reads a setting through the model; the exceptions read what is
    not a setting of receipts (the system's cache folder, the lineage client's own
    variables, the pager's options) or peek before parsing (the log format of a usage
    error, checked later)."""
    root = Path(__file__).resolve().parents[2]
    allowed = {
        "warehouse/settings.py",
        "warehouse/settings_files.py",
        "pipelines/cli/logformat.py",  # the format of a usage error, before the model
        "pipelines/observe/lineage.py",  # OPENLINEAGE__* passed through to its client
        "sources/nhtsa/flatfile/download.py",  # XDG_CACHE_HOME
        "pipelines/cli/listing.py",  # sets LESS for the pager it starts (less's own)
    }
    readers = set()
    for package in ("pipelines", "sources", "warehouse"):
        for path in (root / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv"):
                    readers.add(str(path.relative_to(root)))
    assert readers - allowed == set()


def test_duckdb_threads_set_a_warehouse_connections_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from warehouse.store import Warehouse

    for threads in ("1", "3"):
        monkeypatch.setenv("RECEIPTS_DUCKDB_THREADS", threads)
        with Warehouse.open(str(tmp_path / "w.duckdb")) as wh:
            [(value,)] = wh._con.execute("SELECT current_setting('threads')").fetchall()
        assert value == int(threads)
