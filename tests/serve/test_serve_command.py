"""The ``receipts serve`` command: its help, its options' ranges, the line saying where it
serves, the pages it answers, and Ctrl-C (exit 130, the interrupt convention)."""

from __future__ import annotations

import json
import signal
import urllib.request

import pytest

from pipelines.cli.exits import EXIT_INTERRUPTED, EXIT_USAGE
from tests.conftest import cli
from tests.serve import served
from tests.serve.process import serving


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    return served.shared(tmp_path_factory)


def test_help_has_examples_and_binds_loopback_by_default() -> None:
    result = cli("serve", "--help")
    assert result.exit_code == 0
    assert "Examples:" in result.stdout and "receipts serve --warehouse" in result.stdout
    assert "[default: 127.0.0.1]" in result.stdout


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_a_port_out_of_range_is_a_usage_error(port: str, tmp_path: object) -> None:
    result = cli("serve", "--port", port, "--warehouse", "nowhere.duckdb")
    assert result.exit_code == EXIT_USAGE
    assert "--port" in result.stderr


def test_a_missing_warehouse_is_refused_before_serving(tmp_path: object) -> None:
    result = cli("serve", "--warehouse", f"{tmp_path}/missing.duckdb", "--port", "0")
    assert result.exit_code != 0
    assert "no warehouse at" in result.stderr and "serving" not in result.stderr


def test_it_serves_where_it_says_and_stops_on_ctrl_c(warehouse: str) -> None:
    with serving(warehouse) as server:
        assert f"serving {warehouse} read-only at {server.url}/" in server.first_line
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with direct.open(f"{server.url}/index.json", timeout=30) as response:
            assert response.status == 200
            data = json.load(response)
        assert data["location"] == warehouse
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(timeout=20) == EXIT_INTERRUPTED
        assert server.process.stderr is not None
        assert "interrupted by SIGINT" in server.process.stderr.read()
