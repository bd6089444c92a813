"""Notify URLs hold secrets (Apprise keeps tokens in the host, the path and the query: a
Slack webhook's three tokens, a Discord webhook id and token, a password): only the scheme
is ever shown."""

from __future__ import annotations

import re

_URL = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*)://[^\s'\"<>()…]+")


def redact_url(url: str) -> str:
    """``slack://T1/B2/secret`` -> ``slack://…``."""
    match = _URL.match(url.strip())
    return f"{match.group(1)}://…" if match else "…"


def redact_text(text: str, secrets: list[str] | tuple[str, ...] = ()) -> str:
    """Every URL in ``text`` cut to its scheme, and every known secret removed (a library's
    message may quote part of a URL without its scheme)."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            text = text.replace(secret, "…")
    return _URL.sub(lambda m: f"{m.group(1)}://…", text)


def url_parts(url: str) -> list[str]:
    """The pieces of ``url`` that may be secret: every path segment, host, user, password and
    query value longer than three characters (for :func:`redact_text`)."""
    rest = url.split("://", 1)[-1]
    return [p for p in re.split(r"[/?&=@:#]", rest) if len(p) > 3]
