"""OpenLineage run events (https://openlineage.io/docs/spec/run-cycle): with
``OPENLINEAGE_URL`` set, each run is a START event and a COMPLETE or FAIL event sent through
the official client (``openlineage-python``), which reads its own configuration
(``OPENLINEAGE_URL``, ``OPENLINEAGE_ENDPOINT``, ``OPENLINEAGE_API_KEY``, ``openlineage.yml``).

Inputs are the upstream endpoints the run's sources read; outputs are the warehouse tables
it wrote and, after a push, the target's dataset, with facets for the document counts and
the push's receipt. Both events are sent when the run has finished, each with its own
time (the run's start and its end).
"""

from __future__ import annotations

import os
import uuid
import warnings
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

from pipelines.observe.report import COUNTS, RunReport
from sources.registry import SOURCES

PRODUCER = "https://pypi.org/project/receipts/"
NAMESPACE = "receipts"
WAREHOUSE = "receipts-warehouse"  # never the warehouse's URL: a Postgres one holds a password
TABLES = ("documents", "snapshots", "revisions", "runs")
FACET_SCHEMA = "urn:receipts:openlineage:facets:1"


def _plain(url: str) -> str:
    """``url`` without a user, password, query or fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def inputs_of(report: RunReport) -> list[tuple[str, str]]:
    """(namespace, name) of each upstream endpoint the run's sources read."""
    out = []
    for source in report.counts:
        spec = SOURCES.get(source)
        endpoints = () if spec is None else spec.endpoints
        if not endpoints:
            out.append((f"{NAMESPACE}-source", source))
        for endpoint in endpoints:
            out.append((_plain(endpoint.base_url()), f"{source}.{endpoint.name}"))
    return out


def _facets() -> dict[str, Any]:
    """The client's facet classes, and two of our own (imported when lineage is on)."""
    import attr
    from openlineage.client.facet_v2 import (
        error_message_run,
        output_statistics_output_dataset,
    )
    from openlineage.client.generated.base import RunFacet

    @attr.define
    class ReceiptsCountsRunFacet(RunFacet):
        """Documents of the run per source and outcome, and the run's ids."""

        counts: dict[str, dict[str, int]] = attr.field(factory=dict)
        runIds: list[int] = attr.field(factory=list)
        driftDocuments: int = 0
        _additional_skip_redact: ClassVar[list[str]] = ["counts", "runIds", "driftDocuments"]

        @staticmethod
        def _get_schema() -> str:
            return f"{FACET_SCHEMA}:ReceiptsCountsRunFacet"

    @attr.define
    class ReceiptsPushRunFacet(RunFacet):
        """The push's receipt: unrelated documents before and after, touched by us."""

        pushId: int | None = None
        status: str = ""
        mutations: int = 0
        unrelatedBefore: int | None = None
        unrelatedAfter: int | None = None
        touchedByUs: int | None = None
        _additional_skip_redact: ClassVar[list[str]] = ["status", "mutations"]

        @staticmethod
        def _get_schema() -> str:
            return f"{FACET_SCHEMA}:ReceiptsPushRunFacet"

    return {
        "counts": ReceiptsCountsRunFacet,
        "push": ReceiptsPushRunFacet,
        "error": error_message_run.ErrorMessageRunFacet,
        "stats": output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet,
    }


def events(report: RunReport) -> list[Any]:
    """The START and the COMPLETE (or FAIL) event of the run."""
    from openlineage.client.event_v2 import (
        InputDataset,
        Job,
        OutputDataset,
        Run,
        RunEvent,
        RunState,
    )

    facets = _facets()
    run_id = str(uuid.uuid4())
    job = Job(
        namespace=NAMESPACE,
        name=".".join(filter(None, (report.command.replace(" ", "-"), report.corpus))),
    )
    inputs = [InputDataset(namespace=ns, name=name) for ns, name in inputs_of(report)]
    written = sum(
        c[k] for c in report.counts.values() for k in COUNTS if k not in ("unseen", "failed")
    )
    outputs = [
        OutputDataset(
            namespace=WAREHOUSE,
            name=table,
            outputFacets={"outputStatistics": facets["stats"](rowCount=written)}
            if table == "revisions"
            else {},
        )
        for table in (TABLES if report.counts else ())
    ]
    run_facets: dict[str, Any] = {
        "receipts_counts": facets["counts"](
            counts=report.counts, runIds=list(report.run_ids), driftDocuments=report.drift_total
        )
    }
    push = report.push
    if push is not None:
        outputs.append(
            OutputDataset(
                namespace=push.target,
                name=push.namespace,
                outputFacets={"outputStatistics": facets["stats"](rowCount=push.mutations)},
            )
        )
        run_facets["receipts_push"] = facets["push"](
            pushId=push.push_id,
            status=push.status,
            mutations=push.mutations,
            unrelatedBefore=push.unrelated_before,
            unrelatedAfter=push.unrelated_after,
            touchedByUs=push.touched_by_us,
        )
    end_facets = dict(run_facets)
    if report.status != "ok":
        message = "; ".join(report.failures) or f"the run {report.status}"
        end_facets["errorMessage"] = facets["error"](message=message, programmingLanguage="python")
    start = RunEvent(
        eventType=RunState.START,
        eventTime=report.started.isoformat(),
        run=Run(runId=run_id),
        job=job,
        producer=PRODUCER,
        inputs=inputs,
        outputs=[],
    )
    end = RunEvent(
        eventType=_end_state(report.status),
        eventTime=report.finished.isoformat(),
        run=Run(runId=run_id, facets=end_facets),
        job=job,
        producer=PRODUCER,
        inputs=inputs,
        outputs=outputs,
    )
    return [start, end]


def emit_lineage(report: RunReport) -> list[str]:
    """Send the run's events; a warning for each that could not be sent."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            from openlineage.client import OpenLineageClient
    except ImportError:
        return [
            "OPENLINEAGE_URL is set but openlineage-python is not installed (the lineage extra)"
        ]
    before = {k: v for k, v in os.environ.items() if k.startswith("OPENLINEAGE__")}
    try:
        client = OpenLineageClient()
    finally:
        # The client copies OPENLINEAGE_URL into OPENLINEAGE__TRANSPORT__... variables of
        # this process: put them back, so a later client in the same process reads the
        # configuration of its own time.
        for key in [k for k in os.environ if k.startswith("OPENLINEAGE__")]:
            if key not in before:
                del os.environ[key]
        os.environ.update(before)
    failed = []
    for event in events(report):
        try:
            client.emit(event)
        except Exception as exc:
            failed.append(f"{event.eventType.value} event not sent: {type(exc).__name__}: {exc}")
            break  # no COMPLETE after a START that did not arrive
    return failed


def _end_state(status: str) -> Any:
    """OpenLineage's end state: COMPLETE, ABORT for a run stopped by a signal, else FAIL."""
    from openlineage.client.event_v2 import RunState

    if status == "ok":
        return RunState.COMPLETE
    return RunState.ABORT if status == "interrupted" else RunState.FAIL
