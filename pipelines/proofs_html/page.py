"""The proof page of a bundle: one self-contained HTML file, no network, no external file.

The bundle travels inside the page as JSON in a ``<script type="application/json">``
element; the page's own script (``assets/verify.js``, the six steps, and
``assets/page.js``, what the reader sees) runs them in the browser. The template is rendered
by Jinja2 with autoescaping; the embedded JSON is written with every ``<``, ``>`` and ``&``
as a ``\\u`` escape (and every non-ASCII character too), so no text of the bundle can close
its element or open another. A Content-Security-Policy allows only the page's own script
and style (by their SHA-256) and no connection at all.
"""

from __future__ import annotations

import base64
import hashlib
import json
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from pipelines.visible import visible_cell

_ASSETS = resources.files("pipelines.proofs_html") / "assets"
_ENVIRONMENT = Environment(
    loader=PackageLoader("pipelines.proofs_html", "assets"),
    autoescape=True,
    undefined=StrictUndefined,
    keep_trailing_newline=True,
)
# In JSON these three occur only inside strings, where their \u escapes mean the same.
_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def script_json(value: Any) -> str:
    """``value`` as JSON text safe inside a ``<script>`` element: ASCII only, with no
    ``<``, ``>`` or ``&`` (so no ``</script>``, ``<!--`` or entity), parsing to the same
    value."""
    return json.dumps(value, ensure_ascii=True).translate(_SCRIPT_SAFE)


def _asset(name: str) -> str:
    return (_ASSETS / name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
    return f"'sha256-{digest}'"


def _field(bundle: dict[str, Any], *path: str) -> str:
    """A text field of the bundle for the page's static heading ("" when it is absent or
    not text: the page's own check says what is wrong with the bundle)."""
    value: Any = bundle
    for name in path:
        value = value.get(name) if isinstance(value, dict) else None
    return visible_cell(value) if isinstance(value, str) else ""


def render_bundle_html(bundle: dict[str, Any]) -> str:
    """The proof page of ``bundle`` (a parsed ``.receipt.json``), as the text of one HTML
    file (write it as UTF-8). The page checks the bundle when opened, from a ``file://``
    address too, and can check another bundle file the reader opens. Any JSON object
    renders, a malformed bundle included: its page shows the step that fails."""
    script = _asset("verify.js") + "\n" + _asset("page.js")
    style = _asset("page.css")
    for text in (script, style):
        if "</" in text:  # package data, but a closing tag would end its element early
            raise ValueError("the page's script or style holds '</'")
    doc_id = _field(bundle, "document", "doc_id")
    return _ENVIRONMENT.get_template("page.html.j2").render(
        doc_id=doc_id,
        title=_field(bundle, "document", "title") or doc_id,
        bundle_json=Markup(script_json(bundle)),
        script=Markup(script),
        style=Markup(style),
        script_hash=_csp_hash(script),
        style_hash=_csp_hash(style),
    )
