"""The upstreams of the offline demo: the stateful fakes loaded with demo content, on two days.

Everything here is invented demo content, written in the real response shapes (the fakes
serve them): NHTSA records of the Honda CR-V's automatic emergency braking, short excerpts
standing in for the Hyphae repository's files, a dev.to article with its comment thread.
``demo.sessions_gen`` records what the demo fetches from these fakes into
``demo/sessions/``; ``make demo`` replays those recordings offline.

Between day 1 and day 2:

- NHTSA: Honda's service bulletin A26-091 is reissued, revised, under a new NHTSA id (the
  first issue stays listed), a new complaint about the same braking is filed, and the
  recall's remedy, not yet available on day 1, is;
- GitHub: a new commit on ``main`` moves three pinned files (the gate status page, its
  machine index and the changelog); the other seventeen files keep their bytes;
- dev.to: a comment is deleted (it keeps its place in the tree, and its reply stays), a new
  comment arrives, and the counters and avatar URLs churn as they do upstream.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import respx

from demo.run import DAYS
from fakes import nhtsa
from fakes.forem import FakeForem
from fakes.github import FakeClock, FakeGitHub

MANIFESTS = Path(__file__).resolve().parent.parent / "manifests"


# -- GitHub: the Hyphae repository ---------------------------------------------------------
def _pinned(manifest: str) -> tuple[str, str, list[str]]:
    """(repo, commit, paths) of the one [[github]] entry of a bundled manifest."""
    data = tomllib.loads((MANIFESTS / manifest).read_text("utf-8"))
    (entry,) = data["github"]
    return entry["repo"], entry["commit"], [f["path"] for f in entry["files"]]


HYPHAE_REPO, HYPHAE_PIN, HYPHAE_PATHS = _pinned("hyphae-atlas.toml")
DAY1_EPOCH = datetime.fromisoformat(DAYS[0].now).timestamp()
DAY = 86_400.0
DEMO_NOTE = "demo excerpt written for the receipts offline demo; not the upstream file"


def _json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


HYPHAE_DAY1: dict[str, str] = {
    "README.md": f"""<!-- {DEMO_NOTE} -->
# Hyphae

Hyphae is an embedded database for agent memory: SQL over an append-only store, one
directory per database, and an MCP server that exposes it to agents with explicit
capabilities.

- Release: **3.0.0** (see `docs/release/receipts/3.0.0.md`).
- What we claim, and the evidence for each claim: `docs/product/claims.md`.
""",
    "CHANGELOG.md": f"""<!-- {DEMO_NOTE} -->
# Changelog

## 3.0.0
- Native engine (G7): SQL semantics v1, MVCC commit protocol v1, directory format v1.
- MCP contract v2 with per-tool capabilities.

## 2.2.0
- Compatibility fixtures for directory format v0.
""",
    "LICENSE-POLICY.md": f"""<!-- {DEMO_NOTE} -->
# Licence policy

Code is Apache-2.0. Documentation and specifications written as prose are CC-BY-SA-4.0.
Machine-readable contracts (`contracts/`, `config/`) are Apache-2.0 so that clients may
embed them.
""",
    "compatibility/README.md": f"""<!-- {DEMO_NOTE} -->
# Compatibility fixtures

Each fixture is a database directory written by a released version, with the queries and
answers every later version must reproduce. Fixtures are never edited; a new format gets
new fixtures.
""",
    "contracts/README.md": f"""<!-- {DEMO_NOTE} -->
# Contracts

| file | what it fixes |
|---|---|
| `native-mcp-v2.json` | MCP tools, their arguments and capabilities |
| `native-access-control-v1.json` | roles and the capabilities they grant |
| `openapi/hyphae-v2.yaml` | the HTTP API |
""",
    "mcp/README.md": f"""<!-- {DEMO_NOTE} -->
# MCP server

`hyphae mcp` serves one database to an agent. Every tool declares the capability it needs
(`read`, `write`, `admin`); a session starts with `read` only. Writes go through the same
commit protocol as SQL clients.
""",
    "docs/product/claims.md": f"""<!-- {DEMO_NOTE} -->
# Claims

Every public claim about Hyphae, with the evidence that backs it.

| claim | evidence |
|---|---|
| A committed transaction survives power loss. | gate G4, `docs/native/mvcc-commit-v1.md` |
| Point reads answer in under 50 µs at p99 on the reference machine. | gate G7 |
| A 2.x database directory opens read-only in 3.0. | gate G5, compatibility fixtures |
""",
    "docs/product/native-capabilities.md": f"""<!-- {DEMO_NOTE} -->
# Native capabilities (3.0)

| capability | status | limit |
|---|---|---|
| SQL: SELECT, INSERT, UPDATE, DELETE | supported | no correlated subqueries |
| transactions | serializable, single writer | one writer per directory |
| database size | supported | 1 TiB tested |
""",
    "docs/product/agent-memory.md": f"""<!-- {DEMO_NOTE} -->
# Agent memory (unreleased)

Planned for 3.1: episodic memory tables with retention policies an agent can read but not
change. Not part of any release yet; nothing here is a commitment.
""",
    "docs/gates/native-gate-status.md": f"""<!-- {DEMO_NOTE} -->
# Native engine gates

| gate | what it proves | status |
|---|---|---|
| G4 | durability under power loss | passed |
| G5 | 2.x directories open read-only | passed |
| G7 | p99 point read under 50 µs | passed |
| G8 | 24 h soak without leaks | running |
| G9 | crash recovery under 1 s | pending |
""",
    "docs/release/receipts/3.0.0.md": f"""<!-- {DEMO_NOTE} -->
# Release receipt: 3.0.0

- Tag `v3.0.0`; artefacts signed; SBOM attached.
- Gates at release: G4, G5 and G7 passed; G8 and G9 not required for 3.0.
""",
    "docs/native/sql-semantics-v1.md": f"""<!-- {DEMO_NOTE} -->
# SQL semantics v1 (normative)

1. NULL compares unknown to everything, including NULL.
2. Integer overflow is an error, never a wrap.
3. `ORDER BY` without a total order has no defined tie order.
""",
    "docs/native/mvcc-commit-v1.md": f"""<!-- {DEMO_NOTE} -->
# MVCC commit protocol v1 (normative)

A transaction commits when its log record is durable. Readers see the newest version
committed before they started. There is one writer per directory at a time.
""",
    "docs/native/local-product-v1.md": f"""<!-- {DEMO_NOTE} -->
# Local product v1 (normative)

A database is one directory on a local file system. Network file systems are not supported.
""",
    "docs/native/directory-format-v1.md": f"""<!-- {DEMO_NOTE} -->
# Directory format v1 (normative)

`MANIFEST` names the live segment files; a segment is never modified after it is sealed.
Version 1 reads version 0 directories and never writes them.
""",
    "docs/performance/microsecond-first.md": f"""<!-- {DEMO_NOTE} -->
# Microsecond first (historical)

Before gate G7 we aimed for single-digit microsecond point reads. Superseded by the G7
baseline; kept for the record.
""",
    "contracts/native-mcp-v2.json": _json(
        {
            "$comment": DEMO_NOTE,
            "contract": "hyphae-mcp",
            "version": 2,
            "tools": [
                {"name": "query", "capability": "read"},
                {"name": "remember", "capability": "write"},
                {"name": "vacuum", "capability": "admin"},
            ],
        }
    ),
    "contracts/openapi/hyphae-v2.yaml": f"""# {DEMO_NOTE}
openapi: 3.1.0
info:
  title: Hyphae HTTP API
  version: 2.0.0
paths:
  /v2/query:
    post:
      summary: Run one read-only SQL statement.
""",
    "config/native-gate-status.json": _json(
        {
            "$comment": DEMO_NOTE,
            "release": "3.0.0",
            "gates": {
                "G4": "passed",
                "G5": "passed",
                "G7": "passed",
                "G8": "running",
                "G9": "pending",
            },
        }
    ),
    "contracts/native-access-control-v1.json": _json(
        {
            "$comment": DEMO_NOTE,
            "contract": "hyphae-access-control",
            "version": 1,
            "roles": {
                "reader": ["read"],
                "writer": ["read", "write"],
                "owner": ["read", "write", "admin"],
            },
        }
    ),
}

# The commit that lands on main after day 1: G8 passes, and the changelog says so.
HYPHAE_DAY2_MESSAGE = "Gate G8 passed: 24 h soak without leaks"
HYPHAE_DAY2_CHANGES: dict[str, str] = {
    "docs/gates/native-gate-status.md": HYPHAE_DAY1["docs/gates/native-gate-status.md"].replace(
        "| G8 | 24 h soak without leaks | running |", "| G8 | 24 h soak without leaks | passed |"
    ),
    "config/native-gate-status.json": HYPHAE_DAY1["config/native-gate-status.json"].replace(
        '"G8": "running"', '"G8": "passed"'
    ),
    "CHANGELOG.md": HYPHAE_DAY1["CHANGELOG.md"].replace(
        "# Changelog\n",
        "# Changelog\n\n## Unreleased\n- Gate G8 (24 h soak without leaks) passed.\n",
    ),
}


def hyphae_day1() -> FakeGitHub:
    """The repository with one commit, the one the bundled manifest pins."""
    missing = sorted(set(HYPHAE_PATHS) - set(HYPHAE_DAY1))
    assert not missing, f"demo content missing for {missing}"
    fake = FakeGitHub(clock=FakeClock(DAY1_EPOCH))
    files = {path: HYPHAE_DAY1[path].encode() for path in HYPHAE_PATHS}
    fake.push(HYPHAE_REPO, files, message="Release 3.0.0", sha=HYPHAE_PIN)
    return fake


def hyphae_day2(fake: FakeGitHub) -> str:
    """Day 2, a day later (a fresh rate-limit window): a new commit on main; its SHA."""
    assert isinstance(fake.clock, FakeClock)
    fake.clock.sleep(DAY)
    changes = {path: body.encode() for path, body in HYPHAE_DAY2_CHANGES.items()}
    assert all(HYPHAE_DAY1[p].encode() != b for p, b in changes.items())
    return fake.push(HYPHAE_REPO, changes, message=HYPHAE_DAY2_MESSAGE)


# -- dev.to: an article and its comment thread ---------------------------------------------
ARTICLE_AUTHOR = "kenielzep97"
ARTICLE_SLUG = "my-harness-used-one-label-for-three-different-failures-2gc3"
ARTICLE_ID = 2_987_614
FIRST_COMMENT_NUMBER = int("3ee90", 26)  # id_codes like dev.to's: five base-26 digits
ARTICLE_TITLE = "My harness used one label for three different failures"
ARTICLE_BODY = (
    "Demo article for the receipts offline demo. For two weeks my eval harness marked "
    "every broken run `timeout`. Three different things hid behind that one label: the "
    "model never answered, the tool call hung, and the grader crashed. Splitting the label "
    "changed which fix looked most urgent."
)

# (key, author, text, parent key, created_at)
COMMENTS_DAY1: list[tuple[str, str, str, str | None, str]] = [
    (
        "grader",
        "mirela_ops",
        "We had the same thing: a grader crash counted as a model failure for a month.",
        None,
        "2026-10-28T09:14:00Z",
    ),
    (
        "grader-reply",
        ARTICLE_AUTHOR,
        "Exactly the case that hurt most. The crash rate was 4% and looked like a regression.",
        "grader",
        "2026-10-28T10:02:00Z",
    ),
    (
        "retries",
        "tobias_k",
        "Did you retry hung tool calls? Our retries hid most of the timeouts.",
        None,
        "2026-10-29T16:40:00Z",
    ),
    (
        "retries-reply",
        "dana_evals",
        "Retries hide them in the score, not in the bill. Log each attempt separately.",
        "retries",
        "2026-10-29T18:05:00Z",
    ),
    (
        "labels",
        "priya_r",
        "Three labels is a start. We ended up with nine, one per stage of the pipeline.",
        None,
        "2026-10-30T07:55:00Z",
    ),
]
# Deleted by its author before day 2: the thread keeps its place and its reply.
DELETED_ON_DAY2 = "retries"
COMMENT_DAY2 = (
    "new",
    "sam_qa",
    "Adding a `grader_error` label cut our false regressions by half. Thanks for writing this up.",
    None,
    "2026-11-02T21:30:00Z",
)


@dataclass
class ForemDemo:
    fake: FakeForem
    comments: dict[str, str] = field(default_factory=dict)  # key -> id_code

    def add(self, key: str, author: str, text: str, parent: str | None, created: str) -> None:
        parent_code = None if parent is None else self.comments[parent]
        self.comments[key] = self.fake.add_comment(
            ARTICLE_ID, text, username=author, parent=parent_code, created_at=created
        )


def forem_day1() -> ForemDemo:
    fake = FakeForem(reads_per_second=None)
    fake._next_article = ARTICLE_ID - 1
    fake._next_comment = FIRST_COMMENT_NUMBER
    fake.add_user(ARTICLE_AUTHOR, "Keniel Zep")
    for username, name in (
        ("mirela_ops", "Mirela"),
        ("tobias_k", "Tobias K."),
        ("dana_evals", "Dana"),
        ("priya_r", "Priya R."),
        ("sam_qa", "Sam"),
    ):
        fake.add_user(username, name)
    article = fake.add_article(
        ARTICLE_AUTHOR,
        ARTICLE_SLUG,
        ARTICLE_TITLE,
        ARTICLE_BODY,
        published_at="2026-10-27T12:00:00Z",
        tags=["testing", "ai", "observability"],
    )
    assert article == ARTICLE_ID
    fake.articles[article].readable_date = "Oct 27"
    fake.articles[article].reactions = 23
    demo = ForemDemo(fake)
    for comment in COMMENTS_DAY1:
        demo.add(*comment)
    return demo


def forem_day2(demo: ForemDemo) -> None:
    demo.fake.delete_comment(demo.comments[DELETED_ON_DAY2])
    demo.add(*COMMENT_DAY2)
    # What changes on dev.to without anyone editing anything: counters and avatar URLs.
    demo.fake.articles[ARTICLE_ID].reactions += 9
    demo.fake.articles[ARTICLE_ID].reading_time += 1
    for user in demo.fake.users.values():
        user.image_version += 1


# -- NHTSA: Honda CR-V automatic emergency braking ------------------------------------------
CR_V_YEARS = range(2017, 2023)
AEB_RECALL = "22V999101"
INVESTIGATION = "PE23999"
# Honda's bulletin A26-091, filed under one NHTSA id and reissued, revised, under another
# (the reference's example of a revised bulletin: v1 = 11035885, v2 = 11035781).
BULLETIN = "A26-091"
BULLETIN_V1 = 11035885
BULLETIN_V2 = 11035781
BULLETIN_V1_SUMMARY = (
    "SERVICE BULLETIN A26-091: the Collision Mitigation Braking System (CMBS) may apply the "
    "brakes when no obstacle is ahead. Update the millimeter-wave radar software."
)
BULLETIN_V2_SUMMARY = (
    "SERVICE BULLETIN A26-091 (REVISED): the Collision Mitigation Braking System (CMBS) may "
    "apply the brakes when no obstacle is ahead. Update the millimeter-wave radar software, "
    "then recalibrate the radar and the camera. Vehicles updated under the first issue need "
    "the recalibration only."
)
NEW_COMPLAINT = 11999104
# A recall whose remedy was not yet available on day 1, and is on day 2.
RECALL_REMEDY_DAY1 = (
    "Remedy not yet available. Interim owner notification letters are expected to be mailed "
    "October 9, 2026."
)
RECALL_REMEDY_DAY2 = (
    "Dealers will update the radar software, free of charge. Owner notification letters are "
    "expected to be mailed December 4, 2026."
)


def _cr_v_day1() -> dict[tuple[str, str, int], nhtsa.Vehicle]:
    """Model years 2017-2022 as the API shows them on day 1, with records the manifest's
    filters keep (AEB components, CMBS in the text) and some they leave out."""
    vehicles = {("HONDA", "CR-V", year): nhtsa.Vehicle() for year in CR_V_YEARS}

    def year(y: int) -> nhtsa.Vehicle:
        return vehicles[("HONDA", "CR-V", y)]

    for y in (2020, 2021, 2022):
        aeb = nhtsa.recall(
            AEB_RECALL,
            "FORWARD COLLISION AVOIDANCE: AUTOMATIC EMERGENCY BRAKING",
            "Honda (American Honda Motor Co.) is recalling certain 2020-2022 CR-V vehicles. "
            "The Collision Mitigation Braking System (CMBS) may apply the brakes unexpectedly "
            "when the radar misreads a roadside object.",
            "14/08/2026",
            y,
        )
        aeb["Remedy"] = RECALL_REMEDY_DAY1
        aeb["Notes"] = "Owners may also contact NHTSA's Vehicle Safety Hotline."
        year(y).recalls.append(aeb)
    year(2021).recalls.append(
        nhtsa.recall(
            "21V999102",
            "SEAT BELTS:REAR/OTHER:RETRACTOR",
            "A rear seat belt retractor may not lock during a crash.",
            "18/11/2021",
            2021,
        )
    )
    for y, odi, components, text, incident, filed in (
        (
            2019,
            11999101,
            "FORWARD COLLISION AVOIDANCE",
            "While driving at 45 mph on an empty two-lane road the car braked hard by "
            "itself. The CMBS warning flashed; there was no vehicle or object ahead.",
            "09/14/2026",
            "09/16/2026",
        ),
        (
            2020,
            11999102,
            "SERVICE BRAKES",
            "Collision mitigation braking engaged when passing a parked truck and the car "
            "behind nearly hit me. The dealer found no fault codes.",
            "10/02/2026",
            "10/05/2026",
        ),
        (
            2018,
            11999103,
            "ELECTRICAL SYSTEM",
            "The radio display goes black and resets while driving.",
            "08/20/2026",
            "08/22/2026",
        ),
    ):
        year(y).complaints.append(nhtsa.complaint(odi, components, text, incident, filed, y))
    for y in range(2018, 2023):
        investigation = nhtsa.investigation(
            INVESTIGATION, "Unexpected automatic emergency braking", "2023-02-17T00:00:00Z", None
        )
        investigation["summary"] = (
            "<p>The agency has received reports of CR-V vehicles braking without an obstacle "
            "ahead. A Preliminary Evaluation has been opened to assess the scope and safety "
            "consequence of the alleged defect.</p>"
        )
        year(y).investigations.append(investigation)
    for y in (2017, 2018, 2019):
        year(y).communications.append(_bulletin(BULLETIN_V1, BULLETIN_V1_SUMMARY, "2026-03-02"))
        year(y).communications.append(
            nhtsa.communication(
                11000001, "A20-001", "SERVICE BULLETIN A20-001: radio update", "ELECTRICAL SYSTEM"
            )
        )
    return vehicles


def _bulletin(nhtsa_id: int, summary: str, date: str) -> dict[str, Any]:
    record = nhtsa.communication(nhtsa_id, BULLETIN, summary, "SERVICE BRAKES")
    record["communicationDate"] = f"{date}T00:00:00Z"
    return record


def _cr_v_documents() -> dict[tuple[str, str], list[dict[str, Any]]]:
    return {
        (INVESTIGATION, "investigations"): [
            nhtsa.pdf(f"INOA-{INVESTIGATION}-4521.pdf", 2023, "Opening Resume")
        ],
        (str(BULLETIN_V1), "manufacturerCommunications"): [
            nhtsa.pdf(f"MC-{BULLETIN_V1}-0001.pdf", 2026, "A26-091 service bulletin")
        ],
        ("11000001", "manufacturerCommunications"): [
            nhtsa.pdf("MC-11000001-0001.pdf", 2020, "A20-001 service bulletin")
        ],
    }


def cr_v_day1() -> nhtsa.FakeNhtsa:
    return nhtsa.FakeNhtsa(vehicles=_cr_v_day1(), documents=_cr_v_documents())


def cr_v_day2(fake: nhtsa.FakeNhtsa) -> None:
    """Day 2: A26-091 reissued, revised, under a new NHTSA id (the first issue stays listed);
    a new complaint about the same braking; the recall's remedy is now available."""
    for vehicle in fake.vehicles.values():
        for record in vehicle.recalls:
            if record["NHTSACampaignNumber"] == AEB_RECALL:
                record["Remedy"] = RECALL_REMEDY_DAY2
    for y in (2017, 2018, 2019):
        vehicle = fake.vehicles[("HONDA", "CR-V", y)]
        vehicle.communications.insert(0, _bulletin(BULLETIN_V2, BULLETIN_V2_SUMMARY, "2026-10-29"))
    fake.documents[(str(BULLETIN_V2), "manufacturerCommunications")] = [
        nhtsa.pdf(f"MC-{BULLETIN_V2}-0001.pdf", 2026, "A26-091 service bulletin, revised")
    ]
    fake.vehicles[("HONDA", "CR-V", 2021)].complaints.append(
        nhtsa.complaint(
            NEW_COMPLAINT,
            "FORWARD COLLISION AVOIDANCE,SERVICE BRAKES",
            "Automatic emergency braking activated twice under the same overpass at about 55 "
            "mph with nothing in the lane. The radar was updated under bulletin A26-091.",
            "10/30/2026",
            "11/02/2026",
            2021,
        )
    )


# -- all upstreams -------------------------------------------------------------------------
@dataclass
class DemoUpstreams:
    """The demo's fakes, day 1 state; :meth:`next_day` moves them to day 2."""

    nhtsa: nhtsa.FakeNhtsa = field(default_factory=cr_v_day1)
    github: FakeGitHub = field(default_factory=hyphae_day1)
    forem: ForemDemo = field(default_factory=forem_day1)

    def mount(self, router: respx.MockRouter) -> None:
        """Serve every fake at the upstreams' real base URLs (what the demo replays)."""
        router.route(url__startswith=nhtsa.REAL_API).mock(side_effect=self.nhtsa.handle_api)
        router.route(url__startswith=nhtsa.REAL_STATIC).mock(side_effect=self.nhtsa.handle_static)
        self.github.mount(router)
        self.forem.fake.install(router)

    def next_day(self) -> None:
        cr_v_day2(self.nhtsa)
        hyphae_day2(self.github)
        forem_day2(self.forem)
