"""``--metrics-file``: the Prometheus text format for node_exporter's textfile collector.

The file is rewritten whole at the end of each run, atomically (a temporary file in the
same directory, then a rename, so the collector never reads half a file), keeping the
series of the other corpora already in it. Rendering is pure (:func:`render`).
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from pipelines.observe.report import COUNTS, RunReport

# name -> (type, help): every family this file holds, in this order.
FAMILIES = {
    "receipts_last_run_timestamp_seconds": ("gauge", "When the last run finished (Unix time)."),
    "receipts_last_run_success": ("gauge", "1 when the last run ended ok, 0 when it failed."),
    "receipts_last_run_duration_seconds": ("gauge", "How long the last run took."),
    "receipts_source_last_run_success": (
        "gauge",
        "1 when the source's entries of the last run succeeded, 0 when one failed.",
    ),
    "receipts_last_run_documents": (
        "gauge",
        "Documents of the last run per source and outcome (new, changed, gone, unseen, "
        "restored, failed).",
    ),
    "receipts_last_run_drift_documents": ("gauge", "Documents that drifted in the last run."),
    "receipts_claims": ("gauge", "Claims by status at the last check."),
    "receipts_last_push_mutations": ("gauge", "Mutations the last push applied."),
    "receipts_last_run_retries": ("gauge", "HTTP requests retried during the last run."),
}
NO_CORPUS = "none"  # the corpus label of a run of no manifest (a backfill)
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+\S+")
_CORPUS = re.compile(r'corpus="((?:[^"\\]|\\.)*)"')


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _sample(name: str, labels: dict[str, str], value: float) -> str:
    listed = ",".join(f'{key}="{_escape(val)}"' for key, val in labels.items())
    shown = str(value) if isinstance(value, int) else repr(float(value))
    return f"{name}{{{listed}}} {shown}"


def samples(report: RunReport) -> dict[str, list[str]]:
    """The series of one run, by family."""
    corpus = report.corpus or NO_CORPUS
    run = {"corpus": corpus, "command": report.command}
    out: dict[str, list[str]] = {name: [] for name in FAMILIES}
    out["receipts_last_run_timestamp_seconds"].append(
        _sample("receipts_last_run_timestamp_seconds", run, report.finished.timestamp())
    )
    ok = 1 if report.status == "ok" else 0
    out["receipts_last_run_success"].append(_sample("receipts_last_run_success", run, ok))
    out["receipts_last_run_duration_seconds"].append(
        _sample("receipts_last_run_duration_seconds", run, round(report.duration, 3))
    )
    for source, counts in report.counts.items():
        labels = {"corpus": corpus, "source": source}
        out["receipts_source_last_run_success"].append(
            _sample("receipts_source_last_run_success", labels, 0 if counts["failed"] else 1)
        )
        for outcome in COUNTS:
            out["receipts_last_run_documents"].append(
                _sample(
                    "receipts_last_run_documents", labels | {"outcome": outcome}, counts[outcome]
                )
            )
    if report.command == "refresh":
        out["receipts_last_run_drift_documents"].append(
            _sample("receipts_last_run_drift_documents", {"corpus": corpus}, report.drift_total)
        )
    for status, n in report.claims.items():
        out["receipts_claims"].append(
            _sample("receipts_claims", {"corpus": corpus, "status": status}, n)
        )
    if report.push is not None:
        labels = {"corpus": corpus, "target": report.push.target}
        out["receipts_last_push_mutations"].append(
            _sample("receipts_last_push_mutations", labels, report.push.mutations)
        )
    out["receipts_last_run_retries"].append(
        _sample("receipts_last_run_retries", {"corpus": corpus}, report.retries)
    )
    return out


def _corpus_of(line: str) -> str | None:
    match = _CORPUS.search(line)
    return None if match is None else match.group(1).replace('\\"', '"').replace("\\\\", "\\")


def render(report: RunReport, existing: str = "") -> str:
    """The whole file: this run's series, and those of the other corpora in ``existing``."""
    corpus = report.corpus or NO_CORPUS
    kept: dict[str, list[str]] = {name: [] for name in FAMILIES}
    for line in existing.splitlines():
        match = _SAMPLE.match(line)
        if match and match.group(1) in kept and _corpus_of(line) != corpus:
            kept[match.group(1)].append(line)
    new = samples(report)
    lines = []
    for name, (kind, text) in FAMILIES.items():
        series = sorted(kept[name] + new[name])
        if not series:
            continue
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}", *series]
    return "\n".join(lines) + "\n"


def write_metrics(path: Path, report: RunReport) -> None:
    """Rewrite ``path`` atomically with this run's series (and the other corpora's)."""
    try:
        existing = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        existing = ""
    text = render(report, existing)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
