"""The drift and claims reports as one self-contained HTML file each: Jinja2 templates
(``templates/``, shipped with the package) with autoescaping, one base page and one
stylesheet for both.

Every value a template prints is escaped as :func:`html.escape` escapes it (quotes
included, ``'`` as ``&#x27;``), on one line (a line feed in a value is written ``\\n``), so
the pages are the bytes the hand-written renderer made; only the templates' own markup and
the macros' output are left as they are.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from pipelines.checks.claims import STATUSES, ClaimsCheck, ClaimVerdict
from pipelines.reports import claims_text
from pipelines.reports import wording as w
from pipelines.reports.drift_model import DriftReport, live_source
from pipelines.visible import visible_cell
from warehouse.claims import ClaimHistoryRow
from warehouse.drift import OUTCOMES, DriftRow

DocumentUrl = Callable[[str], str]


def _escaped(value: Any) -> Any:
    """Every printed value escaped by :func:`html.escape`, on one line with its control,
    invisible and direction characters written out (:func:`pipelines.visible.visible_cell`);
    markup already built by a macro (``__html__``) is left as it is."""
    if hasattr(value, "__html__"):
        return value
    return Markup(html.escape(visible_cell(str(value)), quote=True))


def diff_line_class(line: str) -> str:
    """The class of a unified diff's line: file header, hunk, added, removed or context."""
    if line.startswith(("+++", "---")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "ctx"


def linkable(url: str) -> bool:
    """Whether a source URL is shown as a link: only an http(s) one (never ``javascript:``
    or ``data:``)."""
    return url.lower().startswith(("https://", "http://"))


def endpoints(row: DriftRow) -> set[int]:
    """The revisions a drifted document is compared between."""
    return {row.new.revision} | ({row.old.revision} if row.old is not None else set())


ENVIRONMENT = Environment(
    loader=PackageLoader("pipelines.reports", "templates"),
    autoescape=True,
    finalize=_escaped,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
ENVIRONMENT.globals.update(
    w=w,
    outcomes=OUTCOMES,
    line_class=diff_line_class,
    source_of=live_source,
    linkable=linkable,
    endpoints=endpoints,
)


def render_drift_html(report: DriftReport, document_url: DocumentUrl | None = None) -> str:
    """The drift report as one HTML page; with ``document_url`` (doc_id → URL) each
    document's id links to that URL (the web app's page of it)."""
    return ENVIRONMENT.get_template("drift.html.j2").render(
        report=report,
        title=w.title(report),
        footer="receipts drift report",
        document_url=document_url,
    )


def claim_order(verdict: ClaimVerdict) -> tuple[bool, int, str]:
    """Claims that need a look first, by status, those that hold last; then by id."""
    return (verdict.holds, STATUSES.index(verdict.status), verdict.claim.claim_id)


def render_claims_html(
    check: ClaimsCheck,
    document_url: DocumentUrl | None = None,
    history: Mapping[str, Sequence[ClaimHistoryRow]] | None = None,
) -> str:
    """The claims check as one HTML page: every claim with its quote, the revision it
    cites, its status and why; with ``history`` (claim id → its stored checks, oldest first,
    :func:`warehouse.claims.claim_histories`) each claim's statuses in this claim set over
    time; with ``document_url`` (doc_id → URL) each document's id links to that URL."""
    histories = {
        claim_id: [row for row in rows if row.claim_set == check.claim_set]
        for claim_id, rows in (history or {}).items()
    }
    return ENVIRONMENT.get_template("claims.html.j2").render(
        check=check,
        title=claims_text.title(check),
        verdict=claims_text.verdict(check),
        claims=sorted(check.verdicts, key=claim_order),
        histories=histories,
        statuses=STATUSES,
        footer="receipts claims report",
        document_url=document_url,
    )
