"""A text as a SQL string literal, for the statements that take no parameter where it goes
(``ATTACH``, ``LOAD``, ``CREATE SECRET``, a table function's file list)."""


def string(text: str) -> str:
    """``text`` in single quotes, each of its own doubled."""
    return "'" + text.replace("'", "''") + "'"
