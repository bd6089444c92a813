"""GitHub: repository files at pinned commits."""
