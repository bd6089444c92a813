"""Warehouse errors: each one a sentence a user can act on."""

from __future__ import annotations


class WarehouseError(Exception):
    """A warehouse operation could not be carried out."""


class WarehouseBusy(WarehouseError):
    """Another process holds the warehouse."""

    def __init__(self, location: str, run_id: int | None, pid: int | None) -> None:
        who = f"run {run_id}" if run_id is not None else "another process"
        pid_text = f" (pid {pid})" if pid is not None else ""
        super().__init__(
            f"warehouse in use by {who}{pid_text}: {location}; wait for it to finish, "
            "or point --warehouse elsewhere"
        )
        self.run_id = run_id
        self.pid = pid


class SchemaError(WarehouseError):
    """The database schema is not one this version of receipts understands."""


class NotFound(WarehouseError):
    """A document, revision or run does not exist in the warehouse."""
