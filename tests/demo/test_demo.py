"""``make demo``: the three corpora from recorded sessions, day 1 then day 2, reproducibly."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from demo.run import (
    CORPORA,
    DAYS,
    DRIFT_SINCE,
    MANIFESTS,
    DemoFailed,
    Layout,
    day_steps,
    demo,
    dump_tables,
    report_steps,
    run_demo,
    warehouse_digest,
)
from tests.conftest import REPO, cli
from warehouse.store import Warehouse


@dataclass
class DemoRun:
    layout: Layout
    output: str


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """One demo, run as ``make demo`` runs it (``python -m demo.run``)."""
    root = tmp_path_factory.mktemp("demo")
    layout = Layout(warehouse=root / "receipts.duckdb", out=root / "out" / "demo")
    result = CliRunner().invoke(
        demo, ["--warehouse", str(layout.warehouse), "--out", str(layout.out)]
    )
    assert result.exit_code == 0, result.output
    return DemoRun(layout, result.output)


@pytest.fixture
def layout(demo_run: DemoRun) -> Layout:
    return demo_run.layout


def demo_run_steps(layout: Layout) -> list[str]:
    steps = [s for day in DAYS for s in day_steps(layout, day)] + report_steps(layout)
    return [s.shell() for s in steps]


def _dump(layout: Layout) -> dict[str, Any]:
    with Warehouse.open(str(layout.warehouse), read_only=True) as wh:
        return dump_tables(wh)


def _drift(layout: Layout) -> dict[str, Any]:
    result = cli("drift", "--since", DRIFT_SINCE, "--json", "--warehouse", layout.warehouse)
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.output)
    return report


def test_demo_prints_each_command_the_receipts_and_where_everything_went(
    demo_run: DemoRun,
) -> None:
    layout, output = demo_run.layout, demo_run.output
    for step in demo_run_steps(layout):
        assert step in output
    assert output.count("receipt: unrelated documents before 0, after 0; touched by us 0") >= 6
    assert "receipts pin" in output
    assert "## where everything went" in output
    for path in layout.owned_files():
        if path.suffix != ".wal":
            assert path.exists(), path
            assert path.name in output
    assert "<html" in layout.report("html").read_text("utf-8").lower()


def test_day_two_brings_the_changes_the_sessions_recorded(layout: Layout) -> None:
    report = _drift(layout)
    drifted = {doc["doc_id"]: doc["outcome"] for doc in report["documents"]}
    hyphae = "github/Hyphae-Research-Foundation/hyphae/"
    assert {
        hyphae + "CHANGELOG.md": "changed",
        hyphae + "config/native-gate-status.json": "changed",
        hyphae + "docs/gates/native-gate-status.md": "changed",
    }.items() <= drifted.items()
    assert {
        "nhtsa/communication/11035781": "new",  # A26-091 reissued under a new id
        "nhtsa/complaint/11999104": "new",
        "nhtsa/recall/22V999101": "changed",  # its remedy became available
    }.items() <= drifted.items()
    assert "nhtsa/communication/11035885" not in drifted  # the first issue stays as it was
    forem = {d: o for d, o in drifted.items() if d.startswith("forem/")}
    assert sorted(forem.values()) == ["changed", "new"], forem
    assert report["totals"]["gone"] == 0


def test_the_bundled_manifest_is_never_edited_only_its_working_copy(layout: Layout) -> None:
    (pinned,) = [c for c in CORPORA if c.pinned]
    bundled = (MANIFESTS / f"{pinned.name}.toml").read_text("utf-8")
    copy = layout.manifest(pinned).read_text("utf-8")
    commit = re.compile(r'^commit = "([0-9a-f]{40})"', re.M)
    assert commit.findall(bundled) != commit.findall(copy)
    assert commit.sub("", bundled) == commit.sub("", copy)


def test_a_second_demo_writes_the_same_warehouse_and_ndjson_bytes(layout: Layout) -> None:
    tables = _dump(layout)
    ndjson = {c.name: layout.ndjson(c).read_bytes() for c in CORPORA}
    digest = warehouse_digest(layout.warehouse)

    again = run_demo(layout, echo=lambda _line: None)

    assert _dump(layout) == tables
    assert {c.name: layout.ndjson(c).read_bytes() for c in CORPORA} == ndjson
    assert again.digest == digest
    assert tables["runs"] and tables["revisions"] and tables["pushes"]


def test_a_missing_session_stops_the_demo_at_the_step_that_needs_it(tmp_path: Path) -> None:
    layout = Layout(
        warehouse=tmp_path / "w.duckdb", out=tmp_path / "out", sessions=tmp_path / "none"
    )
    with pytest.raises(DemoFailed) as failed:
        run_demo(layout, echo=lambda _line: None)
    assert failed.value.code == 1
    step = failed.value.step
    assert step.args[0] == "refresh"
    assert step.args[1].endswith(f"{CORPORA[0].name}.toml")
    assert "receipts refresh" in str(failed.value)


# -- the walks through the demo: docs/demo.md and the README's short tour --------------------
def demo_page_commands() -> list[tuple[list[str], int]]:
    """The ``receipts`` commands of the demo page and of the README's tour, with the exit code
    each announces in a trailing ``# exit N`` comment (0 without one)."""
    readme = (REPO / "README.md").read_text("utf-8")
    tour = readme.split("## A short tour", 1)[1].split("\n## ", 1)[0]
    section = (REPO / "docs" / "demo.md").read_text("utf-8") + tour
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        for line in block.splitlines():
            if not line.startswith("receipts "):
                continue
            code, comment = 0, re.search(r"#\s*exit (\d+)", line)
            if comment:
                code = int(comment.group(1))
            commands.append((shlex.split(line, comments=True)[1:], code))
    return commands


def test_the_demo_page_walkthrough_names_real_documents() -> None:
    commands = demo_page_commands()
    assert len(commands) >= 6
    assert {args[0] for args, _ in commands} >= {"history", "diff", "verify-quote"}


@pytest.mark.parametrize(
    ("args", "code"), demo_page_commands(), ids=lambda v: " ".join(v) if isinstance(v, list) else ""
)
def test_demo_page_command_runs_against_the_demo(
    layout: Layout, args: list[str], code: int
) -> None:
    result = cli(*args, "--warehouse", layout.warehouse)
    assert result.exit_code == code, result.output
    assert result.output.strip()
