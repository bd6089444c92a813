"""A small fixture corpus driven through the ingest engine over several runs.

Upstream, as the runs see it (shapes from reference/upstream-apis.md):

- run 1 (2026-11-01): three NHTSA complaints, two handbook files from GitHub, an article's
  comment thread with three comments;
- run 2 (2026-11-02): complaint 11561422 is missing from the (complete) complaint listing,
  so it is tombstoned;
- run 3 (2026-11-02 12:00): another corpus ingests its own document;
- run 4 (2026-11-03): complaint 11561421 was edited, ``docs/policy.md`` changed at a new
  commit, comment 2a4bc was deleted, complaint 11561423 is new and 11561422 is back; the
  manifest no longer lists ``docs/old-faq.md``, so it leaves the corpus.

Drift from run 2 to run 4 is therefore: new 1, changed 2, gone 2, restored 1.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from warehouse.canonical import canonical_json
from warehouse.ingest import Ingestor
from warehouse.records import Listing, Provenance, Record
from warehouse.runs import finish_run, start_run
from warehouse.store import Warehouse

CORPUS = "fixture-corpus"
OTHER_CORPUS = "other-corpus"
MANIFEST = f"""
[corpus]
name = "{CORPUS}"
namespace = "fixtureCorpus"

[[synthetic]]
name = "placeholder"
count = 1
"""

RUN_TIMES = {
    1: "2026-11-01T06:00:00Z",
    2: "2026-11-02T06:00:00Z",
    3: "2026-11-02T12:00:00Z",
    4: "2026-11-03T06:00:00Z",
}
REPORT_TIME = "2026-11-03T07:00:00Z"

COMPLAINTS = "nhtsa:complaints:HONDA/CR-V/2019"
HANDBOOK = "github:acme/handbook"
THREAD = "forem:comments:a_id=1234"

COMMIT_1 = "1f0c3a9be2d46c1e0b7a3f5d9e8c7b6a5f4e3d2c"
COMMIT_2 = "8d2e4f6a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e"

STALLED = (
    "While driving on the highway at 65 mph the vehicle stalled without warning. "
    'The dealer said "no defect found" and returned the car.'
)
STALLED_EDITED = (
    "While driving on the interstate at 65 mph the vehicle stalled without warning and "
    'would not restart. The dealer said "no defect found" and returned the car.'
)
POLICY_1 = """# Returns policy

Customers may return a vehicle within 30 days.
Refunds are issued to the original payment method.

Contact support for questions.
"""
POLICY_2 = """# Returns policy

Customers may return a vehicle within 14 days.
Refunds are issued to the original payment method.
Store credit is offered when the receipt is missing.

Contact support for questions.
"""


def complaint(odi: int, summary: str, *, crash: bool = False, injuries: int = 0) -> Record:
    value = {
        "odiNumber": odi,
        "manufacturer": "Honda (American Honda Motor Co.)",
        "crash": crash,
        "fire": False,
        "numberOfInjuries": injuries,
        "numberOfDeaths": 0,
        "dateOfIncident": "05/18/2026",
        "dateComplaintFiled": "06/02/2026",
        "vin": "7FARW2H51KE",
        "components": "ENGINE,ELECTRICAL SYSTEM",
        "summary": summary,
        "products": [
            {
                "type": "Vehicle",
                "productYear": "2019",
                "productMake": "HONDA",
                "productModel": "CR-V",
            }
        ],
    }
    return Record(
        doc_id=f"nhtsa/complaint/{odi}",
        kind="complaint",
        body=canonical_json(value),
        provenance=Provenance(
            url=f"https://api.nhtsa.gov/complaints/odinumber?odinumber={odi}",
            source_format="nhtsa-complaints-v1",
        ),
    )


def handbook_file(path: str, text: str, commit: str) -> Record:
    return Record(
        doc_id=f"github/acme/handbook/{path}",
        kind="file",
        body=text.encode("utf-8"),
        media_type="text/markdown",
        provenance=Provenance(
            url=f"https://raw.githubusercontent.com/acme/handbook/{commit}/{path}",
            commit=commit,
            source_format="github-raw",
        ),
    )


def comment(
    id_code: str, body_html: str, username: str, extra: dict[str, str] | None = None
) -> Record:
    value = {
        "type_of": "comment",
        "id_code": id_code,
        "created_at": "2026-10-30T10:00:00Z",
        "body_html": body_html,
        "user": {"name": username.title(), "username": username},
        **(extra or {}),
    }
    return Record(
        doc_id=f"forem/comment/{id_code}",
        kind="comment",
        body=canonical_json(value),
        provenance=Provenance(
            url="https://dev.to/api/comments?a_id=1234", source_format="forem-comments-v1"
        ),
    )


STEADY = complaint(11561420, "The infotainment screen goes blank at random.")
FLAPPING = complaint(11561422, "Rear hatch opens by itself while parked.")
DEALER = comment(
    "2a4b9",
    "<p>I&#39;d <em>never</em> buy this model again &mdash; the dealer said "
    "&ldquo;no defect found&rdquo;.</p>",
    "ana",
)
DELETED = comment("2a4bc", "<p>Same here, mine stalled twice.</p>", "ben")
README = handbook_file("README.md", "# Handbook\n\nPolicies of Acme Motors.\n", COMMIT_1)
OLD_FAQ = handbook_file("docs/old-faq.md", "# FAQ\n\nAsk the dealer.\n", COMMIT_1)

UPSTREAM: dict[int, list[Listing]] = {
    1: [
        Listing(COMPLAINTS, [STEADY, complaint(11561421, STALLED), FLAPPING], complete=True),
        Listing(HANDBOOK, [README, OLD_FAQ, handbook_file("docs/policy.md", POLICY_1, COMMIT_1)]),
        Listing(THREAD, [DEALER, DELETED, comment("2a4bd", "<p>Thanks!</p>", "cy")], True),
    ],
    2: [
        Listing(COMPLAINTS, [STEADY, complaint(11561421, STALLED)], complete=True),
        Listing(HANDBOOK, [README, OLD_FAQ, handbook_file("docs/policy.md", POLICY_1, COMMIT_1)]),
        Listing(THREAD, [DEALER, DELETED, comment("2a4bd", "<p>Thanks!</p>", "cy")], True),
    ],
    4: [
        Listing(
            COMPLAINTS,
            [
                STEADY,
                complaint(11561421, STALLED_EDITED, crash=True),
                FLAPPING,
                complaint(11561423, "Brake pedal goes to the floor.", injuries=1),
            ],
            complete=True,
        ),
        Listing(HANDBOOK, [README, handbook_file("docs/policy.md", POLICY_2, COMMIT_2)]),
        Listing(THREAD, [DEALER, comment("2a4bd", "<p>Thanks!</p>", "cy")], complete=True),
    ],
}
OTHER = [Listing("synthetic:other", [Record("synthetic/record/other-1", "record", b'{"x":1}')])]


def run_at(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch, when: str, corpus: str, listings: list[Listing]
) -> int:
    """One complete run of ``corpus`` at the frozen time ``when``, through the ingest
    engine: what no listing yields any more leaves the corpus, as in ``receipts ingest``."""
    monkeypatch.setenv("RECEIPTS_NOW", when)
    info = start_run(wh, "ingest", corpus, f"hash-of-{corpus}")
    ingestor = Ingestor(wh, info.run_id, corpus=corpus)
    for listing in listings:
        fresh = Listing(listing.scope, list(listing.records), listing.complete)
        ingestor.ingest(listing.scope.split(":", 1)[0], fresh)
    ingestor.retire_departed()
    finish_run(wh, info.run_id, "ok", {}, [])
    return info.run_id


def build(warehouse_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Write the four runs into a fresh warehouse; leaves RECEIPTS_NOW at report time."""
    with Warehouse.open(warehouse_path) as wh:
        assert run_at(wh, monkeypatch, RUN_TIMES[1], CORPUS, UPSTREAM[1]) == 1
        assert run_at(wh, monkeypatch, RUN_TIMES[2], CORPUS, UPSTREAM[2]) == 2
        assert run_at(wh, monkeypatch, RUN_TIMES[3], OTHER_CORPUS, OTHER) == 3
        assert run_at(wh, monkeypatch, RUN_TIMES[4], CORPUS, UPSTREAM[4]) == 4
    monkeypatch.setenv("RECEIPTS_NOW", REPORT_TIME)


_BUILT: dict[str, str] = {}


def shared(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One fixture warehouse per test session, for tests that only read it."""
    if "path" not in _BUILT:
        path = str(tmp_path_factory.mktemp("fixture-corpus") / "fixture.duckdb")
        with pytest.MonkeyPatch.context() as monkeypatch:
            build(path, monkeypatch)
        _BUILT["path"] = path
    return _BUILT["path"]


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
