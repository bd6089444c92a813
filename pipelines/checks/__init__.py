"""Stored evidence held against something else: one revision against another (word diffs),
a quote or a claims file against its revision, the target against what was pushed (target
drift), a pin against the ref it tracks (pin drift), a pinned file against its upstream
bytes (upstream verification)."""
