"""Object storage as a lake's data path (``s3://BUCKET/PREFIX``, AWS S3 or any S3-compatible
store): DuckDB's S3 secret from the settings, a check that the bucket answers to the
credentials before anything is written, and one line for each way S3 fails (the credentials,
the bucket, the endpoint) instead of DuckDB's HTTP error."""

from __future__ import annotations

import re

import duckdb

from warehouse import settings
from warehouse.errors import ObjectStoreError
from warehouse.sql_literal import string as _quote

SECRET_NAME = "receipts_s3"
_KEYS = {
    "KEY_ID": "AWS_ACCESS_KEY_ID",
    "SECRET": "AWS_SECRET_ACCESS_KEY",
    "SESSION_TOKEN": "AWS_SESSION_TOKEN",
    "REGION": "AWS_REGION",
}
# DuckDB's HTTP errors name the object as s3://… or as the URL it requested.
_URL = re.compile(r"(s3://[^\s'\"]+|https?://[^\s'\"/]+)")
_HTTP = re.compile(r"HTTP Error|\bHTTP (GET|PUT|HEAD|POST|DELETE)\b")
_UNREACHABLE = ("Could not connect", "Could not establish connection", "Connection refused")
_REFUSED_KEYS = ("SignatureDoesNotMatch", "InvalidAccessKeyId", "InvalidToken", "ExpiredToken")


def secret_sql() -> str:
    """``CREATE SECRET`` for an s3:// data path, from the settings: the keys and region, and
    with ``AWS_ENDPOINT_URL`` that endpoint for every request (its scheme deciding SSL) and
    path-style URLs unless ``RECEIPTS_S3_URL_STYLE`` says otherwise."""
    options = ["TYPE s3", "PROVIDER config"]
    given = settings.as_environ(tuple(_KEYS.values()))
    options += [f"{option} {_quote(given[env])}" for option, env in _KEYS.items() if given.get(env)]
    current = settings.current()
    style = current.s3_url_style
    if current.aws_endpoint_url:
        scheme, _, host = current.aws_endpoint_url.partition("://")
        options.append(f"ENDPOINT {_quote(host.rstrip('/'))}")
        options.append(f"USE_SSL {'true' if scheme == 'https' else 'false'}")
        style = style or "path"
    if style:
        options.append(f"URL_STYLE {_quote(style)}")
    return f"CREATE OR REPLACE SECRET {SECRET_NAME} ({', '.join(options)})"


def _has_keys() -> bool:
    given = settings.as_environ(("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"))
    return bool(given.get("AWS_ACCESS_KEY_ID") and given.get("AWS_SECRET_ACCESS_KEY"))


def describe(message: str, data_path: str | None = None) -> str | None:
    """One line for an S3 failure in DuckDB's ``message`` (None when it is not one: only an
    HTTP request's failure is, never the catalog's)."""
    if "s3://" not in message and _HTTP.search(message) is None:
        return None
    found = _URL.search(message)
    where = data_path or (found.group(1) if found else "the data path")
    given = settings.current().aws_endpoint_url
    endpoint = f"{given} (AWS_ENDPOINT_URL)" if given else "AWS S3"
    if any(marker in message for marker in _UNREACHABLE):
        return (
            f"cannot reach the object storage at {endpoint} for {where}: "
            "what was committed stays; run the command again once it answers"
        )
    if "NoSuchBucket" in message:
        return (
            f"the bucket of the data path {where} does not exist at {endpoint}: create it, "
            "or give --data-path a bucket that exists"
        )
    refused = next((code for code in _REFUSED_KEYS if code in message), None)
    if not _has_keys():
        return (
            f"the object storage at {endpoint} refused a request for {where} and no "
            "credentials are set: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
    if refused or "Authentication Failure" in message or "AccessDenied" in message:
        return (
            f"the object storage at {endpoint} refused the credentials for {where} "
            f"({refused or 'access denied'}): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY "
            "(and AWS_SESSION_TOKEN)"
        )
    first = message.strip().splitlines()[0]
    return (
        f"the object storage at {endpoint} failed a request for {where} ({first}): what "
        "was committed stays; run the command again"
    )


def check_bucket(con: duckdb.DuckDBPyConnection, data_path: str) -> None:
    """One listing under ``data_path`` with the secret made: the bucket exists and takes the
    credentials, before anything is read or written (else :class:`ObjectStoreError`)."""
    probe = data_path.rstrip("/") + "/receipts-probe-*"
    try:
        con.execute("SELECT count(*) FROM glob($probe)", {"probe": probe}).fetchall()
    except duckdb.Error as exc:
        line = describe(str(exc), data_path)
        if line is None:
            raise
        raise ObjectStoreError(line) from None


def known_error(exc: BaseException) -> ObjectStoreError | None:
    """The S3 failure ``exc`` stands for, if it is one (at the command's boundary)."""
    if not isinstance(exc, duckdb.HTTPException | duckdb.IOException):
        return None
    line = describe(str(exc))
    return None if line is None else ObjectStoreError(line)
