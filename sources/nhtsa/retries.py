"""NHTSA's retries: which answers are worth a polite retry."""

from __future__ import annotations

from dataclasses import replace

from sources.http import TRANSIENT_STATUSES, HttpPolicy

# NHTSA answers overload with 500 as well as 502/503/504; all are worth a polite retry.
NHTSA_TRANSIENT_STATUSES = TRANSIENT_STATUSES | {500}


def nhtsa_policy(policy: HttpPolicy) -> HttpPolicy:
    return replace(policy, transient_statuses=policy.transient_statuses | NHTSA_TRANSIENT_STATUSES)
