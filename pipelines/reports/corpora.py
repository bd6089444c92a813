"""One drift report of several corpora: each corpus's own report (its last two runs), one
after the other, in a single document of the format asked for."""

from __future__ import annotations

import json
import re

from pipelines.reports.drift_model import DriftReport
from pipelines.reports.formats import render
from pipelines.visible import json_visible

_BODY = re.compile(r"(?s)^(.*?<body>\n)(.*?)(<footer>.*)$")
_TITLE = re.compile(r"<title>.*?</title>")
TITLE = "Drift report: every corpus"


def render_corpora(reports: list[DriftReport], fmt: str) -> str:
    """``reports`` (one per corpus) as one text, Markdown, JSON (``{"corpora": [...]}``)
    or HTML document (one page, each corpus's report in turn)."""
    if fmt == "json":
        value = {"corpora": [report.as_json() for report in reports]}
        return json_visible(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)) + "\n"
    rendered = [render(report, fmt) for report in reports]
    if fmt == "text":
        return "\n".join(rendered)
    if fmt == "md":
        return "\n---\n\n".join(rendered)
    parts = [_BODY.match(page) for page in rendered]
    if not all(parts):  # not the page this module knows: each page as it is
        return "".join(rendered)
    head, _, tail = parts[0].groups()  # type: ignore[union-attr]
    bodies = "".join(part.group(2) for part in parts)  # type: ignore[union-attr]
    return _TITLE.sub(f"<title>{TITLE}</title>", head, count=1) + bodies + tail
