"""A claims check (:class:`pipelines.checks.claims.ClaimsCheck`) as plain text and as
Markdown."""

from __future__ import annotations

from pipelines.checks.claims import STATUSES, ClaimsCheck, ClaimVerdict
from pipelines.reports.markdown_text import md_code, md_text
from pipelines.reports.wording import change_phrase
from pipelines.visible import visible_cell


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
    """The check as lines of text; every value from outside (the claim set's name, ids, the
    rows that could not be read) on its own line, its control, invisible and direction
    characters written out (:func:`~pipelines.visible.visible_cell`)."""
    out = [f"claims of {visible_cell(check.claim_set)}: {verdict(check)}"]
    out += [
        f"{v.status.upper():<14} {visible_cell(v.claim.claim_id)}: {visible_cell(v.message)}"
        for v in not_holding(check)
    ]
    if check.changed:
        out.append(f"changed since the previous check ({len(check.changed)}):")
        out += [f"  {change_phrase(c, visible_cell)}" for c in check.changed]
    out += [
        f"BAD ROW        {visible_cell(bad.origin)}: {visible_cell(bad.problem)}"
        for bad in check.bad
    ]
    return "\n".join(out) + "\n"


def render_md(check: ClaimsCheck) -> str:
    """The check as Markdown: values from outside as code or escaped text
    (:mod:`pipelines.reports.markdown_text`), never read as Markdown or HTML."""
    out = [f"# {md_text(title(check))}", "", verdict(check) + ".", ""]
    drifted = not_holding(check)
    if drifted:
        out += ["| status | claim | document | why |", "|---|---|---|---|"]
        out += [
            f"| {v.status} | {md_code(v.claim.claim_id, cell=True)} | "
            f"{md_code(v.claim.doc_id, cell=True)} | {md_text(v.message)} |"
            for v in drifted
        ]
        out.append("")
    if check.changed:
        out += ["## Changed since the previous check", ""]
        out += [f"- {change_phrase(c, md_code)}" for c in check.changed]
        out.append("")
    if check.bad:
        out += ["## Rows that could not be read", ""]
        out += [f"- {md_text(b.origin)}: {md_text(b.problem)}" for b in check.bad]
        out.append("")
    return "\n".join(out)
