"""A claims check (:class:`pipelines.checks.claims.ClaimsCheck`) as plain text and as
Markdown."""

from __future__ import annotations

from pipelines.checks.claims import STATUSES, ClaimsCheck, ClaimVerdict
from pipelines.reports.wording import change_phrase


def title(check: ClaimsCheck) -> str:
    return f"Claims of {check.claim_set}"


def verdict(check: ClaimsCheck) -> str:
    counts = check.counts
    total = sum(counts.values())
    noun = "claim" if total == 1 else "claims"
    listed = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])
    head = f"{total} {noun} checked" + (f": {listed}" if listed else "")
    bad = len(check.bad)
    return head + (f"; {bad} row{'s' if bad != 1 else ''} could not be read" if bad else "")


def not_holding(check: ClaimsCheck) -> list[ClaimVerdict]:
    return [v for v in check.verdicts if not v.holds]


def render_text(check: ClaimsCheck) -> str:
    out = [f"claims of {check.claim_set}: {verdict(check)}"]
    out += [f"{v.status.upper():<14} {v.claim.claim_id}: {v.message}" for v in not_holding(check)]
    if check.changed:
        out.append(f"changed since the previous check ({len(check.changed)}):")
        out += [f"  {change_phrase(c)}" for c in check.changed]
    out += [f"BAD ROW        {bad.origin}: {bad.problem}" for bad in check.bad]
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_md(check: ClaimsCheck) -> str:
    out = [f"# {_md(title(check))}", "", verdict(check) + ".", ""]
    drifted = not_holding(check)
    if drifted:
        out += ["| status | claim | document | why |", "|---|---|---|---|"]
        out += [
            f"| {v.status} | `{_md(v.claim.claim_id)}` | `{_md(v.claim.doc_id)}` | "
            f"{_md(v.message)} |"
            for v in drifted
        ]
        out.append("")
    if check.changed:
        out += ["## Changed since the previous check", ""]
        out += [f"- {_md(change_phrase(c))}" for c in check.changed]
        out.append("")
    if check.bad:
        out += ["## Rows that could not be read", ""]
        out += [f"- {_md(b.origin)}: {_md(b.problem)}" for b in check.bad]
        out.append("")
    return "\n".join(out)
