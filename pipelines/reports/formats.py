"""The one format dispatch of every report: a drift report or a claims check in text,
JSON, Markdown or HTML."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pipelines.checks.claims import ClaimsCheck
from pipelines.reports import claims_text, drift_md, drift_text
from pipelines.reports.drift_model import DriftReport
from pipelines.reports.html import render_claims_html, render_drift_html
from pipelines.visible import json_visible, visible
from warehouse.claims import ClaimHistoryRow

FORMATS = ("text", "json", "md", "html")
Report = DriftReport | ClaimsCheck


def render_json(report: Report) -> str:
    return json.dumps(report.as_json(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# The renderers of each kind of report, by format (JSON is each report's ``as_json``).
_RENDERERS: dict[type, dict[str, Callable[[Any], str]]] = {
    DriftReport: {
        "text": drift_text.render_text,
        "json": render_json,
        "md": drift_md.render_md,
        "html": render_drift_html,
    },
    ClaimsCheck: {
        "text": claims_text.render_text,
        "json": render_json,
        "md": claims_text.render_md,
        "html": render_claims_html,
    },
}


def render(
    report: Report,
    fmt: str,
    *,
    history: Mapping[str, Sequence[ClaimHistoryRow]] | None = None,
) -> str:
    """``report`` in one of :data:`FORMATS`. Control, invisible and direction characters
    from outside (upstream text, ids, claims) are written out visibly
    (:mod:`pipelines.visible`): ``\\xNN`` or ``\\uNNNN`` in text, Markdown and HTML, JSON
    escapes in JSON (the same JSON values). ``history``: the stored checks of a claims
    check's claims, which its HTML page shows."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; valid: {', '.join(FORMATS)}")
    if fmt == "html" and isinstance(report, ClaimsCheck):
        text = render_claims_html(report, history=history)
    else:
        text = _RENDERERS[type(report)][fmt](report)
    return json_visible(text) if fmt == "json" else visible(text)
