"""``--log-format json`` / ``RECEIPTS_LOG_FORMAT=json``: every line on stderr is one JSON
object (time, level, event, message, run_id, corpus, and the counts, entry and retry details
where they apply), stdout is the same as in the text format, and no token reaches a line.

The shape is what log shippers read: one JSON object per line, as Loki's (Promtail's) ``json``
stage parses a line (https://grafana.com/docs/loki/latest/send-data/promtail/stages/json/;
a line that is not valid JSON is left unparsed or dropped, ``drop_malformed``), and journald
keeps each line a service writes on stderr as one entry's MESSAGE. The time is ISO-8601 in
UTC.
"""

from __future__ import annotations

import json
import re
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from fakes.github import FakeGitHub, manifest_toml, serve
from fakes.nhtsa import FakeNhtsa, cmpl_row, write_zip
from fakes.node_lake import TOKEN as SANITY_TOKEN
from fakes.node_lake import NodeLake
from pipelines.logline import ENV_LOG_FORMAT, KEYS
from tests.conftest import REPO, cli, write_manifest
from tests.publish_corpus import manifest_text, register
from warehouse.lock import FileLock

MANIFEST = REPO / "manifests" / "cr-v-aeb.toml"


def json_lines(stderr: str) -> list[dict[str, Any]]:
    """Every line of ``stderr`` as a JSON object with the documented keys, or the test fails."""
    assert stderr.endswith("\n"), repr(stderr)
    lines = []
    for text in stderr.splitlines():
        line = json.loads(text)
        assert isinstance(line, dict), text
        assert set(KEYS) <= set(line), text
        assert line["level"] in ("debug", "info", "warning", "error"), text
        assert isinstance(line["event"], str) and isinstance(line["message"], str), text
        moment = datetime.fromisoformat(line["time"])
        assert moment.utcoffset() is not None and moment.utcoffset().total_seconds() == 0
        lines.append(line)
    return lines


def same_but_transactions(one: str, other: str) -> bool:
    def masked(text: str) -> str:
        return re.sub(r"rcpt-[0-9a-f-]+", "rcpt-*", text)

    return "rcpt-" in one and masked(one) == masked(other)


def test_a_refresh_with_a_retry_writes_only_json_lines_and_the_same_stdout(
    fake_nhtsa: FakeNhtsa, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = {}
    for fmt in ("text", "json"):
        (tmp_path / fmt).mkdir()
        monkeypatch.chdir(tmp_path / fmt)
        fake_nhtsa.fail("/recalls/recallsByVehicle", 503, retry_after="1", modelYear="2018")
        args = ("refresh", MANIFEST, "--warehouse", tmp_path / fmt / "w.duckdb")
        outputs[fmt] = cli("--log-format", fmt, *args)
        assert outputs[fmt].exit_code == 0, outputs[fmt].output
    text, structured = outputs["text"], outputs["json"]
    # the same stdout but for the push's transaction id, new at each push, and the NDJSON
    # target's absolute path (each run publishes to out/ in its own folder)
    assert same_but_transactions(
        structured.stdout.replace(str((tmp_path / "json").resolve()), "DIR"),
        text.stdout.replace(str((tmp_path / "text").resolve()), "DIR"),
    )
    lines = json_lines(structured.stderr)
    assert len(lines) == len(text.stderr.splitlines())
    [retry] = [line for line in lines if line["event"] == "http.retry"]
    assert retry["level"] == "warning"
    assert retry["retry"]["status"] == 503 and retry["retry"]["attempt"] == 1
    assert retry["retry"]["max_retries"] == 4 and retry["retry"]["wait_seconds"] == 1
    assert retry["message"] in text.stderr  # the same words as the text line
    [finished] = [line for line in lines if line["event"] == "entry.finished"]
    assert finished["run_id"] == retry["run_id"] == 1
    assert finished["corpus"] == retry["corpus"] == "cr-v-aeb"
    assert finished["source"] == "nhtsa" and finished["entry"] == retry["entry"]
    assert finished["counts"]["new"] == finished["counts"]["records"] > 0
    assert any(line["event"] == "step.finished" for line in lines)  # publish's progress


def test_the_environment_variable_asks_for_json_and_an_error_is_one_line(
    fake_nhtsa: FakeNhtsa, tmp_path: Path, warehouse_path: Path
) -> None:
    fake_nhtsa.fail("/recalls/recallsByVehicle", 503, times=10, retry_after="0", modelYear="2018")
    result = cli("ingest", MANIFEST, "--warehouse", warehouse_path, env={ENV_LOG_FORMAT: "json"})
    assert result.exit_code == 1
    lines = json_lines(result.stderr)
    assert [line["retry"]["attempt"] for line in lines if line["event"] == "http.retry"] == [
        1,
        2,
        3,
        4,
    ]
    [failed] = [line for line in lines if line["event"] == "entry.failed"]
    assert failed["level"] == "error" and "gave up after 5 attempts" in failed["message"]

    missing = cli("refresh", tmp_path / "absent.toml", env={ENV_LOG_FORMAT: "json"})
    assert missing.exit_code == 2 and missing.stdout == ""
    [error] = json_lines(missing.stderr)
    assert error["event"] == "error" and error["level"] == "error"
    assert error["exit_code"] == 2 and error["error_type"] == "ManifestError"
    assert error["message"].startswith(str(tmp_path / "absent.toml"))
    assert error["run_id"] is None and error["corpus"] is None


def test_an_internal_error_with_debug_and_a_python_warning_are_json_lines_too(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("always")  # as a user's Python shows it (not pytest's error)
            warnings.warn("a library's own warning", UserWarning, stacklevel=1)
        raise RuntimeError("boom")

    monkeypatch.setattr("pipelines.cli.ledger.Warehouse.open", broken)
    result = cli("--log-format", "json", "--debug", "runs", "--warehouse", warehouse_path)
    lines = json_lines(result.stderr)
    assert result.exit_code == 1, result.output
    assert lines[-1]["event"] == "internal_error" and "boom" in lines[-1]["message"]
    assert any("RuntimeError: boom" in line.get("traceback", "") for line in lines)
    [warned] = [line for line in lines if "a library's own warning" in line["message"]]
    assert warned["level"] == "warning" and warned["event"] == "python.warning"


@pytest.mark.parametrize(
    "args",
    [
        ("--log-format", "json", "refresh", "--no-such-option"),
        ("--log-format", "json", "no-such-command"),
        ("--log-format", "json", "--no-such-global"),
    ],
)
def test_a_usage_error_is_one_json_line_and_exit_2(args: tuple[str, ...]) -> None:
    result = cli(*args)
    assert result.exit_code == 2 and result.stdout == ""
    [line] = json_lines(result.stderr)
    assert line["event"] == "usage_error" and line["exit_code"] == 2
    assert "no-such" in line["message"]


def test_text_stays_the_default_and_a_bad_format_is_exit_2_naming_what_is_accepted() -> None:
    plain = cli("refresh", "--no-such-option")
    assert plain.exit_code == 2 and plain.stderr.startswith("Usage: ")
    from_env = cli("runs", env={ENV_LOG_FORMAT: "yaml"})
    assert from_env.exit_code == 2
    assert f"{ENV_LOG_FORMAT} must be 'text' or 'json', not 'yaml'" in from_env.stderr
    from_option = cli("--log-format", "yaml", "runs")
    assert from_option.exit_code == 2
    assert "--log-format" in from_option.stderr and "'text' or 'json'" in from_option.stderr


def test_a_lock_wait_is_a_json_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    warehouse = tmp_path / "w.duckdb"
    holder = FileLock(warehouse, wait=0)
    holder.acquire()
    try:
        monkeypatch.setenv("RECEIPTS_LOCK_WAIT", "0.3")
        manifest = write_manifest(tmp_path, MANIFEST.read_text())
        result = cli("--log-format", "json", "-q", "ingest", manifest, "--warehouse", warehouse)
    finally:
        holder.release()
    assert result.exit_code != 0
    lines = json_lines(result.stderr)
    assert [line["event"] for line in lines] == ["lock.wait", "error"]
    assert "waiting up to" in lines[0]["message"]
    assert not lines[0]["message"].startswith("receipts:")


def test_no_token_reaches_a_log_line(
    node_lake: NodeLake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    github_token = "test-only-github-token-0123456789"
    with serve(FakeGitHub(token=github_token)) as github:
        sha = github.push("octo/hyphae", {"a.md": b"# a\n"})
        github.secondary_limit(retry_after=1, times=1)  # "0" reads as no wait given: 60 s
        manifest = write_manifest(tmp_path, manifest_toml("octo/hyphae", sha, {"a.md": "markdown"}))
        result = cli(
            "--log-format",
            "json",
            "-vv",
            "ingest",
            manifest,
            "--warehouse",
            tmp_path / "g.duckdb",
            env={"GITHUB_TOKEN": github_token},
        )
    assert result.exit_code == 0, result.output
    lines = json_lines(result.stderr)
    assert any(line["event"] == "http.retry" for line in lines)
    assert any(line["event"] == "http.response" for line in lines)
    assert github_token not in result.stderr

    register(monkeypatch)
    assert SANITY_TOKEN in node_lake.env().values()  # the runs below send it
    path = tmp_path / "atlas.toml"
    path.write_text(manifest_text(synthetic=3))
    warehouse = tmp_path / "s.duckdb"
    node_lake.fault("mutate", status=503, retry_after=0)
    published = cli("--log-format", "json", "-vv", "refresh", path, "--warehouse", warehouse)
    node_lake.fault("mutate", status=401, times=10)
    node_lake.put({"_id": "atlas.extra", "_type": "page"})
    failed = cli("--log-format", "json", "-vv", "refresh", path, "--warehouse", warehouse)
    stderr = published.stderr + failed.stderr
    lines = json_lines(stderr)
    assert any(line["event"] == "http.response" for line in lines), stderr
    assert SANITY_TOKEN not in stderr


def test_a_backfill_warning_and_its_progress_are_json_lines(tmp_path: Path) -> None:
    """A filter that keeps no row of a readable file: the warning line, and the read step's
    end with its row counts."""
    path = write_zip(tmp_path / "FLAT_CMPL.zip", "FLAT_CMPL.txt", [cmpl_row(11999001, 1)])
    args = ("backfill", "nhtsa", "--file", path, "--kind", "complaints", "--make", "nope")
    result = cli("--log-format", "json", *args, "--warehouse", tmp_path / "w.duckdb")
    text = cli(*args, "--warehouse", tmp_path / "t.duckdb")
    assert result.exit_code == text.exit_code == 0, result.output
    assert re.sub(r"run \d+", "run N", result.stdout) == re.sub(r"run \d+", "run N", text.stdout)
    lines = json_lines(result.stderr)
    [warning] = [line for line in lines if line["event"] == "backfill.kept_nothing"]
    assert warning["level"] == "warning" and "nothing was imported" in warning["message"]
    [read] = [line for line in lines if line.get("step") == "reading"]
    assert read["counts"] == {"rows": 1, "kept": 0, "malformed": 0}


def test_only_the_emitter_writes_on_stderr() -> None:
    """Every line on stderr goes through ``pipelines/logline.py``: no other module names
    stderr, but for the progress display's stream (its lines go through the emitter) and the
    text format's ``--debug`` traceback."""
    allowed = {
        ("pipelines/logline.py", "out = stream or sys.stderr"),
        ("pipelines/progress.py", "stream = stream or sys.stderr"),
        ("pipelines/cli/common.py", "traceback.print_exc(file=sys.stderr)"),
        # the single-file bundle verifier runs without receipts installed (docs/proof-bundles.md)
        ("pipelines/proofs/verify_receipt.py", 'print(f"error: {reason}", file=sys.stderr)'),
    }
    found = set()
    for package in ("pipelines", "sources", "warehouse"):
        for path in sorted((REPO / package).rglob("*.py")):
            for line in path.read_text().splitlines():
                code = line.split("#", 1)[0].strip()
                if re.search(r"err=True|sys\.(__)?stderr|stderr\.write", code) and not (
                    code.startswith(('"""', "``")) or "``sys.stderr``" in code
                ):
                    found.add((str(path.relative_to(REPO)), code))
    assert found == allowed
