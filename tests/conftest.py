from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from bench import synthetic_source
from pipelines.cli import main
from sources import registry
from sources.http import Endpoint
from warehouse.store import Warehouse

# A shell without job control starts a background command with SIGINT ignored, and an
# ignored signal stays ignored in every process it execs: the commands the interrupt tests
# start would never see their Ctrl-C. The suite's processes take SIGINT as a terminal does.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parent.parent

# The upstream fakes (package ``fakes``) are served to tests through one fixture module per
# upstream.
pytest_plugins = [
    "tests.fixtures.nhtsa",
    "tests.fixtures.github",
    "tests.fixtures.forem",
    "tests.fixtures.sanity",
    "tests.fixtures.upstreams",
    "tests.fixtures.s3",
]

# Scaffolding the wheel does not register: ``[[synthetic]]`` entries, for the many tests that
# want documents without an upstream.
synthetic_source.register()


# DuckDB's threads on each warehouse connection the suite opens (RECEIPTS_DUCKDB_THREADS in
# every test and the commands it starts), when set: `make test` runs with one, as the
# suite's processes already share the cores (measured on 2 cores: the lake subset took
# 20% less CPU, 175 s against 211 s). A test that needs DuckDB's parallel plans removes it.
TEST_DUCKDB_THREADS = os.environ.get("RECEIPTS_TEST_DUCKDB_THREADS")


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the developer's real configuration or tokens."""
    endpoints = {endpoint.env_var for endpoint in registry.endpoints()}
    for name in list(os.environ):
        if (
            name.startswith(("RECEIPTS_", "SANITY_", "AWS_"))
            or name in ("GITHUB_TOKEN", "FOREM_API_KEY")
            or name in endpoints
        ):
            monkeypatch.delenv(name, raising=False)
    if TEST_DUCKDB_THREADS:
        monkeypatch.setenv("RECEIPTS_DUCKDB_THREADS", TEST_DUCKDB_THREADS)


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Callable[[Endpoint, str], str]:
    """Point a source's endpoint at a fake, through the environment variable the source
    declares for it (as a mirror would be); returns the base URL the source will now use."""

    def point(endpoint: Endpoint, url: str) -> str:
        monkeypatch.setenv(endpoint.env_var, url)
        return endpoint.base_url()

    return point


# Which warehouse the ``warehouse_path`` / ``wh`` fixtures give: ``duckdb`` (a file, the
# default), ``ducklake:sqlite`` or ``ducklake:postgres`` (the latter needs ``receipts[lake]``
# and a PostgreSQL at $RECEIPTS_TEST_PG, default ``host=127.0.0.1 user=postgres``). Read once
# here, before each test's environment is emptied. `make test-lake` runs the lake subset.
TEST_WAREHOUSE = os.environ.get("RECEIPTS_TEST_WAREHOUSE", "duckdb")
TEST_PG = os.environ.get("RECEIPTS_TEST_PG", "host=127.0.0.1 user=postgres")


# The lake tests, by module name (so they stay selected wherever a module moves in tests/):
# ``lake``, those of DuckLake itself (`make test-lake` runs them); ``lake_subset``, the
# modules run again with their warehouse fixtures on each DuckLake catalog.
LAKE_MODULES = frozenset(
    {
        "test_lake_concurrency",
        "test_lake_backends",
        "test_lake_faults",
        "test_demo_lake",
        "test_one_engine",
        "test_row_groups",
        "test_table_digests",
        "test_large_listings",
        "test_lake_s3",
        "test_lake_hosts",
    }
)
LAKE_SUBSET_MODULES = frozenset(
    {
        "test_ingest_engine",
        "test_revision_commands",
        "test_flat_bulk",
        "test_identical_file",
        "test_snapshot_compression",
        "test_log_commands",
        "test_reencoding",
        "test_search_index",
    }
)
# Of those, the modules whose warehouse work is the same SQL whatever the catalog (how
# snapshot bodies are stored, re-encoded and indexed): run again on a SQLite catalog only.
# What the catalog itself does (transactions, locks, several writers) is tests/lake/'s, on
# both catalogs.
LAKE_SUBSET_SQLITE_ONLY = frozenset(
    {"test_snapshot_compression", "test_reencoding", "test_search_index"}
)
# `make test` names a file here: each session appends what it passed, failed and skipped, and
# the Makefile ends with one line of it (tests/run_summary.py).
TEST_RESULTS = os.environ.get("RECEIPTS_TEST_RESULTS")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A session of the lake subset alone (``-m lake_subset``, as `make test` runs it on each
    catalog) does not import the other test modules: collecting every module in each of
    its processes cost more than a tenth of the session."""
    if config.getoption("markexpr", "") != "lake_subset" or collection_path.suffix != ".py":
        return None
    module = collection_path.stem
    if not module.startswith("test_"):
        return None
    return module not in LAKE_SUBSET_MODULES or (
        TEST_WAREHOUSE == "ducklake:postgres" and module in LAKE_SUBSET_SQLITE_ONLY
    )


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(getattr(item, "module", None), "__name__", "").rpartition(".")[2]
        if module in LAKE_MODULES:
            item.add_marker(pytest.mark.lake)
        if module in LAKE_SUBSET_MODULES and not (
            TEST_WAREHOUSE == "ducklake:postgres" and module in LAKE_SUBSET_SQLITE_ONLY
        ):
            item.add_marker(pytest.mark.lake_subset)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if TEST_RESULTS and not hasattr(config, "workerinput"):  # once: not in xdist's workers
        from tests.run_summary import record

        record(Path(TEST_RESULTS), TEST_WAREHOUSE, terminalreporter.stats)


class LakeLocation(str):
    """A ``ducklake:`` warehouse URL standing where tests expect a warehouse path."""


@pytest.fixture(scope="session")
def lake_postgres() -> Iterator[Callable[[], str]]:
    """A factory of fresh PostgreSQL databases for lake catalogs, all dropped at the end of
    the session (named after the session, so concurrent sessions never collide)."""
    from tests.lake_support import PostgresDatabases

    databases = PostgresDatabases(TEST_PG)

    def create() -> str:
        try:
            return databases.create()
        except (OSError, RuntimeError) as exc:  # no PostgreSQL here (CI has one: it fails)
            if os.environ.get("CI"):
                raise
            pytest.skip(f"no PostgreSQL for the lake tests ({TEST_PG}): {exc}")

    yield create
    databases.drop_all()


def warehouse_location(
    directory: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Where a fresh warehouse of the session's kind (``RECEIPTS_TEST_WAREHOUSE``) goes, under
    ``directory``; a lake's data path is set in ``monkeypatch``'s environment."""
    if TEST_WAREHOUSE == "duckdb":
        return directory / "w.duckdb"
    monkeypatch.setenv("RECEIPTS_DATA_PATH", str(directory / "lake-data"))
    if TEST_WAREHOUSE == "ducklake:sqlite":
        return LakeLocation(f"ducklake:sqlite:{directory / 'w.sqlite'}")  # type: ignore[return-value]
    if TEST_WAREHOUSE == "ducklake:postgres":
        dbname = request.getfixturevalue("lake_postgres")()
        return LakeLocation(f"ducklake:postgres:dbname={dbname} {TEST_PG}")  # type: ignore[return-value]
    raise pytest.UsageError(
        f"RECEIPTS_TEST_WAREHOUSE={TEST_WAREHOUSE!r}: use duckdb, "
        "ducklake:sqlite or ducklake:postgres"
    )


@pytest.fixture
def warehouse_path(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Path:
    return warehouse_location(tmp_path, request, monkeypatch)


@pytest.fixture
def wh(warehouse_path: Path) -> Iterator[Warehouse]:
    warehouse = Warehouse.open(str(warehouse_path))
    yield warehouse
    warehouse.close()


def write_manifest(directory: Path, body: str, name: str = "m.toml") -> Path:
    path = directory / name
    path.write_text(body)
    return path


def cli(*args: Any, env: dict[str, str] | None = None) -> Result:
    """Invoke the CLI as a user would (exit codes, stdout, stderr kept apart)."""
    runner = CliRunner()
    return runner.invoke(main, [str(a) for a in args], env=env, catch_exceptions=False)
