"""Forem: the ``[[forem]]`` manifest entry (one article, or a user's articles) and the
instance it belongs to, which decides its documents' ids and listing scopes."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from sources.base import StrictModel
from sources.http import Endpoint, base_url_problem, host_of
from warehouse.ids import doc_id

# The Forem instance: dev.to unless an entry's ``base_url`` (or article URL) names another.
INSTANCE = Endpoint("forem", "https://dev.to", "RECEIPTS_FOREM_URL")
# Below the published 3 GET/s per IP (fixed one-second windows), with room for jitter.
DEFAULT_READS_PER_SECOND = 2.5


def _http_origin(value: str, what: str) -> tuple[str, str]:
    """(origin, path) of an http(s) URL, or a ValueError naming ``what`` was expected."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"must be an http(s) URL of {what}, got {value!r}")
    problem = base_url_problem(f"{parts.scheme}://{parts.netloc}{parts.path}")
    if problem:
        raise ValueError(problem)
    return f"{parts.scheme}://{parts.netloc.lower()}", parts.path


def article_url_parts(url: str) -> tuple[str, str, str]:
    """``https://dev.to/<user>/<slug>`` → (origin, user, slug); query and fragment ignored."""
    origin, path = _http_origin(url, "an article like https://dev.to/<username>/<slug>")
    segments = [s for s in path.split("/") if s]
    if len(segments) != 2:
        raise ValueError(
            f"must be an article URL like https://dev.to/<username>/<slug>, got {url!r}"
        )
    return origin, segments[0], segments[1]


class ForemEntry(StrictModel):
    """One ``[[forem]]`` entry: exactly one of ``url``, ``id`` or ``username``."""

    url: str | None = None
    id: int | None = Field(default=None, gt=0, strict=True)
    username: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
    comments: bool = Field(default=True, strict=True)
    base_url: str | None = None
    reads_per_second: float = Field(default=DEFAULT_READS_PER_SECOND, gt=0, le=1000, strict=True)

    @field_validator("url")
    @classmethod
    def _article_url(cls, value: str | None) -> str | None:
        if value is not None:
            article_url_parts(value)
        return value

    @field_validator("base_url")
    @classmethod
    def _instance_url(cls, value: str | None) -> str | None:
        if value is not None:
            _http_origin(value, "a Forem instance like https://dev.to")
        return value

    @model_validator(mode="after")
    def _one_target(self) -> ForemEntry:
        given = [name for name in ("url", "id", "username") if getattr(self, name) is not None]
        if len(given) != 1:
            have = f"got {', '.join(given)}" if given else "got none"
            raise ValueError(f"give exactly one of url, id, username ({have})")
        if self.url and self.base_url and host_of(self.url) != host_of(self.base_url):
            raise ValueError(
                f"url host {host_of(self.url)!r} differs from base_url host "
                f"{host_of(self.base_url)!r}"
            )
        return self


DEFAULT_HOST = INSTANCE.default_host


@dataclass(frozen=True)
class Instance:
    """The Forem instance of an entry: the host its documents belong to (declared by the
    manifest) and the base URL they are fetched from (the environment may override it)."""

    host: str
    url: str

    @classmethod
    def of(cls, entry: ForemEntry) -> Instance:
        declared = entry.base_url or (article_url_parts(entry.url)[0] if entry.url else None)
        return cls(host=host_of(declared or INSTANCE.default_url), url=INSTANCE.base_url(declared))

    @property
    def _key(self) -> tuple[str, ...]:
        return () if self.host == DEFAULT_HOST else (self.host,)

    def doc_id(self, kind: str, key: str) -> str:
        return doc_id("forem", kind, *self._key, key)

    def scope(self, *parts: object) -> str:
        return ":".join(["forem", *self._key, *map(str, parts)])


def sibling_doc_id(of_doc_id: str, kind: str, key: str) -> str:
    """The doc_id of another document of the same instance as ``of_doc_id``."""
    instance = of_doc_id.split("/")[2:-1]
    return doc_id("forem", kind, *instance, key)
