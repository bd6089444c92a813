"""Orchestration: manifests, ingest runs, curation, publishing, reports and the CLI."""

__version__ = "0.1.0"
# What every request to an upstream or a target says it comes from (HttpFactory's caller names
# itself; recorded sessions hold this header byte for byte).
USER_AGENT = f"receipts/{__version__} (evidence corpora with provenance; python-httpx)"
