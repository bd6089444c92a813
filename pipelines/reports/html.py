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
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from pipelines.checks.claims import ClaimsCheck
from pipelines.reports import claims_text
from pipelines.reports import wording as w
from pipelines.reports.drift_model import DriftReport
from pipelines.visible import visible_cell
from warehouse.drift import OUTCOMES, DriftRow, RevisionRef


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


def source_of(row: DriftRow) -> RevisionRef | None:
    """The newest live revision that says where its bytes came from (for a pinned file, the
    URL names its commit)."""
    live = [r for r in row.timeline if not r.tombstone and r.source_url]
    return live[-1] if live else None


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
    source_of=source_of,
    linkable=linkable,
    endpoints=endpoints,
)


def render_drift_html(report: DriftReport) -> str:
    return ENVIRONMENT.get_template("drift.html.j2").render(
        report=report, title=w.title(report), footer="receipts drift report"
    )


def render_claims_html(check: ClaimsCheck) -> str:
    return ENVIRONMENT.get_template("claims.html.j2").render(
        check=check,
        title=claims_text.title(check),
        verdict=claims_text.verdict(check),
        drifted=claims_text.not_holding(check),
        footer="receipts claims report",
    )
