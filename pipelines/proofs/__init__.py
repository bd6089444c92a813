"""Proof bundles (docs/proof-bundles.md): one self-contained JSON file per cited quote that
anyone can check offline: the snapshot's bytes, the quote's exact location in them, the
citation, the log entry with its inclusion proof and signed checkpoint. ``verify_receipt``
is the reference verifier, a single file with only the standard library and cryptography."""
