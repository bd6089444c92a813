"""A flat file fetched from NHTSA's static host (or the mirror configured for it)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from sources.http import HttpFactory, host_of
from sources.nhtsa.source import STATIC
from warehouse.settings_files import cache_dir


def static_url(url: str) -> str:
    """A flat-file URL on the configured static host: a URL naming NHTSA's own static host
    is redirected to ``RECEIPTS_NHTSA_STATIC_URL`` when that is set (a mirror, a fake)."""
    configured = STATIC.base_url()
    if host_of(url) == STATIC.default_host and configured != STATIC.default_url:
        return configured + urlsplit(url).path
    return url


def default_download_dir() -> Path:
    return cache_dir() / "nhtsa"


def download(http: HttpFactory, url: str, directory: Path, max_bytes: int) -> Path:
    """Fetch a flat file from the static host into ``directory`` (polite, retried, capped)."""
    url = static_url(url)
    name = Path(urlsplit(url).path).name or "download.zip"
    directory.mkdir(parents=True, exist_ok=True)
    destination = directory / name
    client = http.client("nhtsa", [STATIC.base_url()])
    client.download(url, destination, max_bytes=max_bytes)
    return destination
