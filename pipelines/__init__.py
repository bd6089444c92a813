"""Orchestration: manifests, ingest runs, curation, publishing, reports and the CLI."""

from importlib.metadata import version

# The one version source is pyproject.toml's `version`, read from the installed package.
__version__ = version("receipts")
# What every request to an upstream or a target says it comes from (HttpFactory's caller names
# itself; recorded sessions hold this header byte for byte).
USER_AGENT = f"receipts/{__version__} (evidence corpora with provenance; python-httpx)"
