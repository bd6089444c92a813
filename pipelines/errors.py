"""Domain errors the CLI turns into one-line messages and exit codes."""

from __future__ import annotations

# Exit codes that scripts and cron can rely on.
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_DRIFT = 3
EXIT_GUARD = 4


class ReceiptsError(Exception):
    """A known failure with a message for the user and an exit code."""

    exit_code = EXIT_FAILURE


class ManifestError(ReceiptsError):
    """A manifest is missing, unreadable or invalid."""

    exit_code = EXIT_USAGE


class UsageError(ReceiptsError):
    exit_code = EXIT_USAGE
