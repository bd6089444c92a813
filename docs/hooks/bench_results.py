"""The benchmark table of the performance page, rendered from ``bench/results.json`` when the
site is built (an MkDocs hook), by the function ``python -m bench.run --markdown-from`` uses.
The committed results are the one source of the figures; the page holds only a marker.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results.json"
MARKER = "<!-- bench-results -->"


def table() -> str:
    if str(REPO) not in sys.path:  # bench/ is a folder of the repository, not of the wheel
        sys.path.insert(0, str(REPO))
    from bench.run import markdown

    return markdown(json.loads(RESULTS.read_text(encoding="utf-8"))).strip() + "\n"


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs hook: put the rendered table where the marker stands."""
    if MARKER in markdown:
        return markdown.replace(MARKER, table())
    return markdown
