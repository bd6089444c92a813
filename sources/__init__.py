"""Upstream connectors, one small module per source, and the HTTP policy they share."""
