"""Every setting receipts reads from its environment, typed and checked in one place.

Two models: :class:`Settings` (the warehouse, the upstream endpoints, limits and defaults),
read from environment variables and from the config file ``receipts.toml``; and
:class:`Secrets` (tokens and keys), read from environment variables and from a secrets file
that only its owner may read, never from the config file. Where both give a value the
environment wins; a command-line option wins over both (the command line applies that).

The config file is ``--config FILE`` or ``$RECEIPTS_CONFIG``, else ``receipts.toml`` in the
working directory when there is one. The secrets file is ``$RECEIPTS_SECRETS``, else
``secrets.toml`` beside the config file when there is one.

A value that is not what its setting accepts is a :class:`SettingsError` (a usage error, exit
2) naming the variable (or the file and key) and what it accepts, never a traceback later.
Lower layers read settings through :func:`current` and :func:`secrets` (this module is in the
lowest layer so that every layer can).
"""

from __future__ import annotations

import math
import os
import re
import stat
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsConfigDict

from warehouse.errors import SettingsError
from warehouse.settings_files import (
    ENV_CONFIG,
    ENV_SECRETS,
    config_path,
    secrets_path,
)

_MEMORY = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(k|m|g|t)(i?b)?\s*", re.IGNORECASE)
_POWERS = {"k": 1, "m": 2, "g": 3, "t": 4}
MIN_MEMORY_BYTES = 16 * 1000**2
# Measured: bounds a 200k-record ingest at ~300 MB RSS.
DEFAULT_WAREHOUSE_MEMORY_LIMIT = "256MB"
# The backfill's build database: one block's lines.
DEFAULT_BUILD_MEMORY_LIMIT = "256MB"


_M = TypeVar("_M", bound=BaseSettings)


def _setting(
    default: Any, env: str, accepts: str, group: str, description: str, **checks: Any
) -> Any:
    """A field: its environment variable, what it accepts (for errors and the docs) and its
    group in the docs' table."""
    extra: dict[str, Any] = {"accepts": accepts, "group": group}
    return Field(
        default, validation_alias=env, description=description, json_schema_extra=extra, **checks
    )


def _url(value: Any) -> Any:
    if value is not None and not str(value).startswith(("https://", "http://")):
        raise ValueError("not an http(s):// URL")
    return value


def memory_bytes(value: str) -> int:
    """Bytes of a DuckDB memory size (``256MB``: 1000^2, ``256MiB``: 1024^2)."""
    found = _MEMORY.fullmatch(value)
    if found is None:
        raise ValueError("not a size")
    number, unit, binary = found.groups()
    base = 1024 if binary and binary.lower() == "ib" else 1000
    return int(float(number) * base ** _POWERS[unit.lower()])


class Settings(BaseSettings):
    """The settings of the config file and the environment (never a secret)."""

    model_config = SettingsConfigDict(
        extra="forbid", populate_by_name=True, env_ignore_empty=True, frozen=True
    )

    # -- the warehouse --------------------------------------------------------------------
    warehouse: str = _setting(
        "receipts.duckdb",
        "RECEIPTS_WAREHOUSE",
        "a DuckDB file path, ducklake:sqlite:FILE or 'ducklake:postgres:DSN'",
        "warehouse",
        "The warehouse every command uses (--warehouse).",
    )
    data_path: str | None = _setting(
        None,
        "RECEIPTS_DATA_PATH",
        "a folder, shared storage or s3://BUCKET/PREFIX",
        "warehouse",
        "Where a new DuckLake warehouse keeps its data files (--data-path).",
    )
    duckdb_memory_limit: str = _setting(
        DEFAULT_WAREHOUSE_MEMORY_LIMIT,
        "RECEIPTS_DUCKDB_MEMORY_LIMIT",
        "a size of 16MB or more: a number and KB, MB, GB, TB (or KiB, MiB, GiB, TiB)",
        "warehouse",
        "DuckDB's memory limit on a warehouse's connection; beyond it DuckDB spills to disk.",
    )
    duckdb_threads: int | None = _setting(
        None,
        "RECEIPTS_DUCKDB_THREADS",
        "a whole number, 1 or more",
        "warehouse",
        "DuckDB's threads on a warehouse's connection (default: one per core); fewer leave "
        "cores to other work on a shared host.",
        ge=1,
    )
    log_key: str | None = _setting(
        None,
        "RECEIPTS_LOG_KEY",
        "a key file made by `receipts log init` (mode 0600)",
        "warehouse",
        "The Ed25519 key each writing run signs the transparency log's checkpoint with; "
        "unset, checkpoints are recorded unsigned.",
    )
    log_origin: str | None = _setting(
        None,
        "RECEIPTS_LOG_ORIGIN",
        "a log name, e.g. example.org/receipts (one line)",
        "warehouse",
        "The origin line of the log's checkpoints (default: receipts/ and 16 hex digits "
        "kept in the warehouse).",
    )
    backfill_build_memory_limit: str = _setting(
        DEFAULT_BUILD_MEMORY_LIMIT,
        "RECEIPTS_BACKFILL_BUILD_MEMORY_LIMIT",
        "a size of 1MB or more: a number and KB, MB, GB, TB (or KiB, MiB, GiB, TiB)",
        "limits",
        "DuckDB's memory limit on the database where `backfill nhtsa` builds each block's "
        "documents; beyond it DuckDB spills to disk (the plan's is --memory-limit).",
    )
    lock_wait: float = _setting(
        30.0,
        "RECEIPTS_LOCK_WAIT",
        "seconds, 0 or more (0 fails at once)",
        "limits",
        "How long a command waits for a warehouse (or a corpus) another process holds.",
        ge=0,
        allow_inf_nan=False,
    )
    now: datetime | None = _setting(
        None,
        "RECEIPTS_NOW",
        "an ISO-8601 date and time, e.g. 2026-11-01T06:00:00Z",
        "defaults",
        "Freeze the warehouse's clock (replayed sessions, reproducible audits).",
    )
    # -- upstream endpoints and the Sanity API ------------------------------------------
    nhtsa_url: str | None = _setting(
        None,
        "RECEIPTS_NHTSA_URL",
        "an http(s):// URL",
        "endpoints",
        "NHTSA's API (default https://api.nhtsa.gov); a mirror, a proxy or a fake.",
    )
    nhtsa_static_url: str | None = _setting(
        None,
        "RECEIPTS_NHTSA_STATIC_URL",
        "an http(s):// URL",
        "endpoints",
        "NHTSA's flat files (default https://static.nhtsa.gov).",
    )
    github_api_url: str | None = _setting(
        None,
        "RECEIPTS_GITHUB_API_URL",
        "an http(s):// URL",
        "endpoints",
        "GitHub's REST API (default https://api.github.com).",
    )
    github_raw_url: str | None = _setting(
        None,
        "RECEIPTS_GITHUB_RAW_URL",
        "an http(s):// URL",
        "endpoints",
        "GitHub's raw files (default https://raw.githubusercontent.com).",
    )
    forem_url: str | None = _setting(
        None,
        "RECEIPTS_FOREM_URL",
        "an http(s):// URL",
        "endpoints",
        "The Forem instance (default https://dev.to).",
    )
    sanity_api_host: str | None = _setting(
        None,
        "SANITY_API_HOST",
        "an http(s):// URL",
        "endpoints",
        "Sanity's API host (default https://PROJECT.api.sanity.io).",
    )
    sanity_project_id: str | None = _setting(
        None,
        "SANITY_PROJECT_ID",
        "a Sanity project id",
        "publishing",
        "The Sanity project to publish to (with SANITY_DATASET and SANITY_TOKEN).",
    )
    sanity_dataset: str | None = _setting(
        None,
        "SANITY_DATASET",
        "a dataset name",
        "publishing",
        "The Sanity dataset to publish to.",
    )
    sanity_api_version: str | None = _setting(
        None,
        "SANITY_API_VERSION",
        "YYYY-MM-DD, 2025-02-19 or later",
        "publishing",
        "Sanity's API version (default 2025-02-19).",
    )
    aws_region: str | None = _setting(
        None, "AWS_REGION", "an AWS region", "warehouse", "The region of an s3:// data path."
    )
    aws_endpoint_url: str | None = _setting(
        None,
        "AWS_ENDPOINT_URL",
        "an http(s):// URL",
        "endpoints",
        "An S3-compatible endpoint for an s3:// data path (MinIO, R2, ...): every S3 request "
        "goes there; http:// turns SSL off.",
    )
    s3_url_style: Literal["path", "vhost"] | None = _setting(
        None,
        "RECEIPTS_S3_URL_STYLE",
        "path or vhost",
        "warehouse",
        "How an s3:// data path's URLs name the bucket: path (s3.host/bucket/key) or vhost "
        "(bucket.s3.host/key); default path with AWS_ENDPOINT_URL, else vhost.",
    )
    # -- limits -----------------------------------------------------------------------------
    github_max_rate_wait: float = _setting(
        60.0,
        "RECEIPTS_GITHUB_MAX_RATE_WAIT",
        "seconds, 0 or more",
        "limits",
        "How long a rate-limited GitHub request may wait for the limit's reset.",
        ge=0,
        allow_inf_nan=False,
    )
    notify_timeout: float = _setting(
        5.0,
        "RECEIPTS_NOTIFY_TIMEOUT",
        "seconds, 0.1 or more",
        "limits",
        "Seconds to wait for each notification endpoint (--notify-timeout).",
        ge=0.1,
        allow_inf_nan=False,
    )
    # -- defaults ---------------------------------------------------------------------------
    notify: str | None = _setting(
        None,
        "RECEIPTS_NOTIFY",
        "Apprise URLs, space- or comma-separated",
        "defaults",
        "Where every run sends one message (--notify).",
    )
    openlineage_url: str | None = _setting(
        None,
        "OPENLINEAGE_URL",
        "an http(s):// URL",
        "defaults",
        "Where run events go as OpenLineage events (the lineage extra).",
    )
    log_format: Literal["text", "json"] = _setting(
        "text",
        "RECEIPTS_LOG_FORMAT",
        "text or json",
        "defaults",
        "How lines on stderr are written (--log-format).",
    )
    debug: bool = _setting(
        False,
        "RECEIPTS_DEBUG",
        "1 or 0 (true, false)",
        "defaults",
        "Print the traceback of any error (--debug).",
    )
    record: Path | None = _setting(
        None,
        "RECEIPTS_RECORD",
        "a folder",
        "defaults",
        "Save every HTTP exchange under this folder (--record).",
    )
    replay: Path | None = _setting(
        None,
        "RECEIPTS_REPLAY",
        "a folder",
        "defaults",
        "Serve HTTP from a recorded session in this folder, offline (--replay).",
    )

    @field_validator(
        "nhtsa_url",
        "nhtsa_static_url",
        "github_api_url",
        "github_raw_url",
        "forem_url",
        "sanity_api_host",
        "aws_endpoint_url",
        "openlineage_url",
    )
    @classmethod
    def _is_url(cls, value: str | None) -> str | None:
        return _url(value)  # type: ignore[no-any-return]

    @field_validator("duckdb_memory_limit")
    @classmethod
    def _is_size(cls, value: str) -> str:
        if memory_bytes(value) < MIN_MEMORY_BYTES:
            raise ValueError("too small")
        return value.strip()

    @field_validator("backfill_build_memory_limit")
    @classmethod
    def _is_build_size(cls, value: str) -> str:
        # Small limits are allowed here: tests (and the curious) make the build spill.
        if memory_bytes(value) < 1_000_000:
            raise ValueError("too small")
        return value.strip()

    @field_validator("now", mode="before")
    @classmethod
    def _is_iso(cls, value: Any) -> Any:
        if isinstance(value, str):
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        if isinstance(value, datetime) and value.tzinfo is None:
            return value.replace(tzinfo=UTC)  # a TOML local date-time
        return value

    @field_validator("lock_wait", "github_max_rate_wait", "notify_timeout")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("not finite")
        return value

    def by_env(self, name: str) -> Any:
        """The value of the setting whose environment variable is ``name``."""
        return getattr(self, ENV_FIELDS[name])


def endpoint_url(env_var: str) -> str | None:
    """The base URL configured for an endpoint: its setting (environment, then config file),
    or for an endpoint of a source the model does not list (one registered later), its
    environment variable, checked the same way."""
    if env_var in ENV_FIELDS:
        return current().by_env(env_var)  # type: ignore[no-any-return]
    value = os.environ.get(env_var, "").strip() or None
    try:
        return _url(value)  # type: ignore[no-any-return]
    except ValueError:
        raise SettingsError(
            f"{env_var}={value!r} is not accepted: expected an http(s):// URL"
        ) from None


class Secrets(BaseSettings):
    """Tokens and keys: from the environment or the secrets file, never the config file."""

    model_config = SettingsConfigDict(
        extra="forbid", populate_by_name=True, env_ignore_empty=True, frozen=True
    )

    sanity_token: str | None = _setting(
        None, "SANITY_TOKEN", "a Sanity API token", "secrets", "Sanity's write token."
    )
    github_token: str | None = _setting(
        None,
        "GITHUB_TOKEN",
        "a GitHub token",
        "secrets",
        "Sent to GitHub's default (or configured) hosts only: higher rate limits.",
    )
    forem_api_key: str | None = _setting(
        None,
        "FOREM_API_KEY",
        "a Forem API key",
        "secrets",
        "Sent to the configured Forem instance only.",
    )
    aws_access_key_id: str | None = _setting(
        None, "AWS_ACCESS_KEY_ID", "an AWS key id", "secrets", "For an s3:// data path."
    )
    aws_secret_access_key: str | None = _setting(
        None, "AWS_SECRET_ACCESS_KEY", "an AWS secret key", "secrets", "For an s3:// data path."
    )
    aws_session_token: str | None = _setting(
        None, "AWS_SESSION_TOKEN", "an AWS session token", "secrets", "For an s3:// data path."
    )

    def __repr__(self) -> str:
        given = [name for name in type(self).model_fields if getattr(self, name)]
        return f"Secrets(set: {', '.join(given) or 'none'})"

    __str__ = __repr__


def _env_names(model: type[BaseModel]) -> dict[str, str]:
    return {str(field.validation_alias): name for name, field in model.model_fields.items()}


ENV_FIELDS = _env_names(Settings)
SECRET_ENV_FIELDS = _env_names(Secrets)
# Variables that choose where settings are read from, not settings themselves.
LOCATORS = {
    ENV_CONFIG: "The config file (--config); else receipts.toml in the working directory.",
    ENV_SECRETS: "The secrets file; else secrets.toml beside the config file.",
}

_cache: dict[tuple[Any, ...], tuple[Settings, Secrets]] = {}


def current() -> Settings:
    """The settings now in force (the environment and the config file as they are now)."""
    return _load()[0]


def secrets() -> Secrets:
    """The secrets now in force (the environment and the secrets file)."""
    return _load()[1]


def as_environ(names: tuple[str, ...]) -> dict[str, str]:
    """The settings and secrets of these environment variable names, as strings, for code
    that reads a mapping like ``os.environ`` (unset ones are left out)."""
    settings, kept = _load()
    found: dict[str, str] = {}
    for name in names:
        if name in ENV_FIELDS:
            value = getattr(settings, ENV_FIELDS[name])
        else:
            value = getattr(kept, SECRET_ENV_FIELDS[name])
        if value is not None:
            found[name] = str(value)
    return found


def check() -> None:
    """Read every setting now: a bad value is a :class:`SettingsError` before a command
    starts."""
    _load()


def _load() -> tuple[Settings, Secrets]:
    config, secrets_file = config_path(), secrets_path()
    key = (
        config and config.absolute(),
        _mtime(config),
        secrets_file and secrets_file.absolute(),
        _mtime(secrets_file),
        tuple(os.environ.get(n) for n in (*ENV_FIELDS, *SECRET_ENV_FIELDS)),
    )
    cached = _cache.get(key)
    if cached is None:
        cached = (
            _build(Settings, _read_toml(config, "config file", Settings), config),
            _build(Secrets, _read_toml(secrets_file, "secrets file", Secrets), secrets_file),
        )
        _cache.clear()
        _cache[key] = cached
    return cached


def _mtime(path: Path | None) -> float | None:
    try:
        return None if path is None else path.stat().st_mtime
    except OSError:
        return None


def _read_toml(path: Path | None, kind: str, model: type[BaseModel]) -> dict[str, Any]:
    """The file's keys, by environment variable name; a missing, unreadable or unknown key
    is a :class:`SettingsError` naming the file."""
    if path is None:
        return {}
    if kind == "secrets file":
        _check_private(path)
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise SettingsError(f"no {kind} at {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read the {kind} {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"the {kind} {path} is not valid TOML: {exc}") from None
    fields = model.model_fields
    unknown = [key for key in data if key not in fields]
    if unknown:
        message = f"the {kind} {path} has unknown key(s) {', '.join(map(repr, unknown))}"
        if model is Settings and any(key in Secrets.model_fields for key in unknown):
            message += "; tokens go in the environment or a secrets file (chmod 600)"
        raise SettingsError(f"{message}; valid keys: {', '.join(fields)}")
    return {str(fields[key].validation_alias): value for key, value in data.items()}


def _check_private(path: Path) -> None:
    """Refuse a secrets file that others may read or write."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise SettingsError(f"no secrets file at {path}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SettingsError(
            f"the secrets file {path} is readable by others (mode {stat.filemode(mode)}); "
            f"run `chmod 600 {path}`"
        )


def _build(model: type[_M], from_file: dict[str, Any], path: Path | None) -> _M:
    """The model from the file's values and the environment's (which win)."""
    from_env = EnvSettingsSource(model)()
    try:
        return model.model_validate({**from_file, **from_env})
    except ValidationError as exc:
        raise SettingsError(_describe(exc, model, from_env, path)) from None


def _describe(
    exc: ValidationError, model: type[BaseModel], from_env: dict[str, Any], path: Path | None
) -> str:
    """One line per bad value: where it came from, the value, and what is accepted."""
    fields = _env_names(model)
    lines = []
    for error in exc.errors():
        env = str(error["loc"][0]) if error["loc"] else ""
        name = fields.get(env, env)
        field = model.model_fields.get(name)
        extra = field.json_schema_extra if field is not None else None
        accepts = extra.get("accepts") if isinstance(extra, dict) else None
        where = env if env in from_env else f"{name} in {path}"
        shown = "a secret" if model is Secrets else repr(error.get("input"))
        lines.append(f"{where}={shown} is not accepted: expected {accepts or error['msg']}")
    return "; ".join(lines)


def rows() -> list[dict[str, str]]:
    """Every environment variable and config key, for the docs' table: variable, key,
    where it may be set, what it accepts, its default and what it does."""
    table = []
    for model, files in ((Settings, "receipts.toml"), (Secrets, "secrets.toml")):
        for name, field in model.model_fields.items():
            extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
            table.append(
                {
                    "variable": str(field.validation_alias),
                    "key": name,
                    "file": files,
                    "group": str(extra.get("group", "")),
                    "accepts": str(extra.get("accepts", "")),
                    "default": "" if field.default in (None, False) else str(field.default),
                    "description": field.description or "",
                }
            )
    for variable, description in LOCATORS.items():
        table.append(
            {
                "variable": variable,
                "key": "",
                "file": "",
                "group": "files",
                "accepts": "a file path",
                "default": "",
                "description": description,
            }
        )
    return table


def duckdb_threads() -> dict[str, int]:
    """DuckDB's ``threads`` for a warehouse's connection when ``duckdb_threads`` is set
    (DuckDB's own default, one per core, otherwise)."""
    threads = current().duckdb_threads
    return {} if threads is None else {"threads": threads}
