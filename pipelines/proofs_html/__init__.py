"""The proof page: one self-contained HTML file that checks a proof bundle in the reader's
browser (Web Crypto: SHA-256, Ed25519) and shows the quote in its document.
See :func:`render_bundle_html` and docs/proof-page.md."""

from pipelines.proofs_html.page import render_bundle_html

__all__ = ["render_bundle_html"]
