"""Orchestration: manifests, ingest runs, curation, publishing, reports and the CLI."""

__version__ = "0.1.0"
