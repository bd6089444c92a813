"""Publish targets, and which one a push uses.

The choice is explicit, never a fallback:

- an NDJSON file when one is named (``--out FILE`` or ``--target ndjson:FILE``);
- else the Sanity HTTP API when ``SANITY_PROJECT_ID``, ``SANITY_DATASET`` and
  ``SANITY_TOKEN`` are all set;
- else, when no ``SANITY_*`` variable is set at all, the NDJSON file
  ``out/<corpus>.ndjson``;
- and when some are set but not all, a :class:`UsageError` naming the missing ones: a
  half-configured Sanity is a mistake to fix, not a reason to write a file nobody reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pipelines.publish.targets.base import Target
from pipelines.publish.targets.ndjson import NdjsonTarget
from pipelines.publish.targets.sanity_http import (
    ALL_ENV,
    SanityHttpTarget,
    SanitySettings,
    missing_settings,
)
from sources.http import HttpFactory
from warehouse import settings
from warehouse.errors import UsageError

DEFAULT_OUT_DIR = Path("out")
NDJSON_PREFIX = "ndjson:"


def default_out(corpus_name: str) -> Path:
    return DEFAULT_OUT_DIR / f"{corpus_name}.ndjson"


def ndjson_target_path(spec: str | None, out: Path | None = None) -> Path | None:
    """The NDJSON file a ``--target ndjson:PATH`` (and/or ``--out PATH``) names, or None."""
    if spec is None:
        return out
    if not spec.startswith(NDJSON_PREFIX) or not spec[len(NDJSON_PREFIX) :]:
        raise UsageError(f"--target {spec!r}: expected ndjson:PATH (e.g. ndjson:out/corpus.ndjson)")
    path = Path(spec[len(NDJSON_PREFIX) :])
    if out is not None and out != path:
        raise UsageError(f"--out {out} and --target {spec} name different files; give one")
    return path


def check_sanity_configuration(environ: Mapping[str, str] | None = None) -> None:
    """Raise :class:`UsageError` when some ``SANITY_*`` variables are set and a required
    one is missing, or when all are set and one is invalid (an API version older than
    2025-02-19, say)."""
    env = settings.as_environ(ALL_ENV) if environ is None else environ
    if not missing_settings(env):
        SanitySettings.from_env(env)
        return
    present = [name for name in ALL_ENV if env.get(name)]
    missing = missing_settings(env)
    if present and missing:
        raise UsageError(
            f"Sanity is half configured: {', '.join(present)} set but {', '.join(missing)} "
            "not; set "
            + ("it" if len(missing) == 1 else "them")
            + ", or choose the NDJSON file explicitly with --target ndjson:PATH (or unset "
            "every SANITY_* variable)"
        )


def open_target(
    corpus_name: str, *, http: HttpFactory, out: Path | None = None
) -> tuple[Target, list[str]]:
    """The target a push of ``corpus_name`` writes to, and notices about the choice."""
    if out is not None:
        return NdjsonTarget(out), []
    check_sanity_configuration()
    settings = SanitySettings.from_env()
    if settings is not None:
        return SanityHttpTarget(settings, http), []
    return NdjsonTarget(default_out(corpus_name)), []


__all__ = [
    "NdjsonTarget",
    "SanityHttpTarget",
    "Target",
    "check_sanity_configuration",
    "default_out",
    "ndjson_target_path",
    "open_target",
]
