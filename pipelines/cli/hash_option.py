"""``--hash H``: a revision cited by a prefix of its content hash, checked by the one rule of
:mod:`warehouse.hash_prefix` (at least 7 hex digits) before anything is opened."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from warehouse.errors import UsageError
from warehouse.hash_prefix import MIN_HASH_PREFIX, check_hash_prefix

F = TypeVar("F", bound=Callable[..., Any])


def _checked(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return check_hash_prefix(value, name="")
    except UsageError as exc:
        raise click.BadParameter(str(exc).lstrip(), ctx, param) from None


def hash_option(help: str) -> Callable[[F], F]:
    """The ``--hash`` option (into ``content_hash``) of a command citing a revision."""
    return click.option(
        "--hash",
        "content_hash",
        metavar="H",
        callback=_checked,
        help=f"{help} ({MIN_HASH_PREFIX} or more hex digits).",
    )
