"""Content-hash prefixes: how a person cites a revision by its SHA-256 without all 64 digits.

One minimum everywhere (``show --hash``, ``verify-quote --hash``, ``diff A B``, a claims
file's hash): 7 hex digits, as git abbreviates commits and as short as a prefix can be while
staying unambiguous among a document's revisions in practice.
"""

from __future__ import annotations

from warehouse.errors import UsageError

MIN_HASH_PREFIX = 7
HEX = frozenset("0123456789abcdef")


def hash_prefix_problem(text: str) -> str | None:
    """What is wrong with ``text`` as a content-hash prefix (already lowercased, without
    ``sha256:``), or None."""
    if any(c not in HEX for c in text):
        return "is not hexadecimal"
    if len(text) < MIN_HASH_PREFIX:
        return f"is shorter than {MIN_HASH_PREFIX} hex digits"
    if len(text) > 64:
        return "is longer than a SHA-256 (64 hex digits)"
    return None


def normalise(text: str) -> str:
    """``text`` as a prefix to match: lowercase, without a ``sha256:`` label."""
    return text.strip().lower().removeprefix("sha256:")


def check_hash_prefix(text: str, name: str = "--hash") -> str:
    """The prefix ``text`` names, or a :class:`UsageError` naming ``name`` and the rule."""
    prefix = normalise(text)
    problem = hash_prefix_problem(prefix)
    if problem is not None:
        raise UsageError(
            f"{name} {text!r} {problem}: give at least {MIN_HASH_PREFIX} hex digits of the "
            "content hash (ls and history show them)"
        )
    return prefix
