"""Audits over the warehouse: drift reports, word diffs, quote checks, target drift, pin
drift and upstream verification."""
