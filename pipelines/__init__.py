"""Orchestration: manifests, ingest runs, curation, publishing, reports and the CLI."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """``__version__`` and ``USER_AGENT``, made when first asked for: reading the installed
    package's metadata took about 35 ms of every command's start, and most need neither.

    - ``__version__``: the one version source is pyproject.toml's `version`, read from the
      installed package.
    - ``USER_AGENT``: what every request to an upstream or a target says it comes from
      (HttpFactory's caller names itself; recorded sessions hold this header byte for
      byte)."""
    if name == "__version__":
        from importlib.metadata import version

        value = version("receipts")
    elif name == "USER_AGENT":
        version = __getattr__("__version__")
        value = f"receipts/{version} (evidence corpora with provenance; python-httpx)"
    else:
        raise AttributeError(f"module 'pipelines' has no attribute {name!r}")
    globals()[name] = value
    return value
