"""Publish targets, and which one a push uses.

The Sanity HTTP API when ``SANITY_PROJECT_ID``, ``SANITY_DATASET`` and ``SANITY_TOKEN`` are
all set; otherwise (or when an output file is named) an NDJSON file, by default
``out/<corpus>.ndjson``.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.publish.targets.base import Target
from pipelines.publish.targets.ndjson import NdjsonTarget
from pipelines.publish.targets.sanity_http import SanityHttpTarget, SanitySettings, missing_settings
from sources.http import HttpFactory

DEFAULT_OUT_DIR = Path("out")


def default_out(corpus_name: str) -> Path:
    return DEFAULT_OUT_DIR / f"{corpus_name}.ndjson"


def open_target(
    corpus_name: str, *, http: HttpFactory, out: Path | None = None
) -> tuple[Target, list[str]]:
    """The target a push of ``corpus_name`` writes to, and notices about the choice."""
    notices: list[str] = []
    settings = SanitySettings.from_env()
    if out is None and settings is not None:
        return SanityHttpTarget(settings, http), notices
    missing = missing_settings()
    if out is None and len(missing) < 3:
        notices.append(
            f"Sanity is not fully configured (missing {', '.join(missing)}); "
            "writing an NDJSON file instead"
        )
    return NdjsonTarget(out or default_out(corpus_name)), notices


__all__ = ["NdjsonTarget", "SanityHttpTarget", "Target", "default_out", "open_target"]
