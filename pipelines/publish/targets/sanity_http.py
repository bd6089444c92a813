"""The Sanity Content Lake HTTP API as a publish target.

Configured by ``SANITY_PROJECT_ID``, ``SANITY_DATASET`` and ``SANITY_TOKEN`` (the token is
sent as a Bearer header and nowhere else: not in URLs, messages, the warehouse or recorded
exchanges), ``SANITY_API_VERSION`` (default ``2025-02-19``, the first version whose ``raw``
perspective includes release versions; an older one is refused: ``sanity_versions``) and
``SANITY_API_HOST`` (default ``https://<project>.api.sanity.io``; set it for a proxy or a
test fake).

Every read uses the ``raw`` perspective, so drafts and versions are counted. A namespace is
matched with ``string::startsWith(_id, "<ns>.")``, which matches exactly the ids under the
prefix (``_id in path("<ns>.**")`` is looser in the reference GROQ implementation); a
foreign namespace (another corpus's, inside ours) is taken out the same way. Conflict
re-reads use the doc endpoint, which returns the latest committed state.

A mutation request is never repeated (its ``transactionId`` "must be unique in the
dataset", https://www.sanity.io/docs/http-mutations, and Sanity's own client never retries a
mutation, not even after a 429: sanity-io/client src/http/request.ts ``shouldRetryRequest``).
A timeout, a dropped connection, a 5xx, a 429 or an answer that the transaction id is already
used leaves the outcome unknown: :class:`CommitUncertain` tells the push to find out from the
documents (``_rev`` is the id of the transaction that last wrote a document) and to resend,
in a new transaction, only what provably did not commit.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from pipelines.publish.confinement import is_ours
from pipelines.publish.plan import TargetDocument, TargetState
from pipelines.publish.targets.base import Committed, Touched, Transaction, target_document
from pipelines.publish.targets.sanity_limits import id_chunks, transaction_id_taken
from pipelines.publish.targets.sanity_versions import api_version_floor, read_versions
from pipelines.publish.writers import Write, authors, writes
from sources.http import HttpFactory, parse_json, parse_retry_after
from warehouse import settings
from warehouse.errors import (
    CommitUncertain,
    HttpError,
    MutationRateLimited,
    RevisionConflict,
    TargetError,
    TerminalHttpError,
    TransientHttpError,
    UsageError,
)

ENV_PROJECT = "SANITY_PROJECT_ID"
ENV_DATASET = "SANITY_DATASET"
ENV_TOKEN = "SANITY_TOKEN"
ENV_API_VERSION = "SANITY_API_VERSION"
ENV_API_HOST = "SANITY_API_HOST"
REQUIRED_ENV = (ENV_PROJECT, ENV_DATASET, ENV_TOKEN)
ALL_ENV = (*REQUIRED_ENV, ENV_API_VERSION, ENV_API_HOST)
DEFAULT_API_VERSION = "2025-02-19"

_DATASET_RE = re.compile(r"~?[a-z0-9][-\w]{0,63}", re.ASCII)
_PROJECT_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,63}", re.IGNORECASE | re.ASCII)
_VERSION_RE = re.compile(r"\d{4}-\d{2}-\d{2}|1|X", re.ASCII)
# Reads are retried on these (Sanity's client retries 429/502/503 for reads and queries).
SANITY_TRANSIENT = frozenset({429, 500, 502, 503, 504})
# A mutation answered with one of these may have committed before the answer went wrong.
UNCERTAIN_STATUSES = frozenset({500, 502, 503, 504})
PAGE_SIZE = 5_000
TOUCHED_SHOWN = 20
SHOWN_WRITES = 20  # writers.SHOWN

# A document is the corpus's when it is under "<ns>.", is a draft of one, or is a Content
# Release version of one ("versions.<release>.<ns>.…"). $ns ends with the dot.
OURS = (
    '(string::startsWith(_id, $ns) || string::startsWith(_id, "drafts." + $ns) || '
    '(string::startsWith(_id, "versions.") && '
    'string::startsWith(_id, "versions." + string::split(_id, ".")[1] + "." + $ns)))'
)


def ours_filter(foreign: Sequence[str]) -> tuple[str, dict[str, str]]:
    """GROQ true for the corpus's documents (``$ns`` ends with the dot), and the params it
    needs beside ``$ns``: none of a ``foreign`` namespace's documents, drafts or versions."""
    clauses, params = [OURS], {}
    for number, namespace in enumerate(foreign):
        clauses.append("!" + OURS.replace("$ns", f"$foreign{number}"))
        params[f"foreign{number}"] = namespace + "."
    return "(" + " && ".join(clauses) + ")", params


PLAN_FIELDS = (
    '{_id, _rev, _type, "curatedHash": provenance.curatedHash, '
    '"ownedFields": provenance.ownedFields}'
)


@dataclass(frozen=True)
class SanitySettings:
    project_id: str
    dataset: str
    token: str = field(repr=False)
    api_version: str = DEFAULT_API_VERSION
    api_host: str = ""

    @property
    def base_url(self) -> str:
        return (self.api_host or f"https://{self.project_id}.api.sanity.io").rstrip("/")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SanitySettings | None:
        """The settings in the environment (or the config and secrets files), or None unless
        all three required ones are set."""
        env = settings.as_environ(ALL_ENV) if environ is None else environ
        if not all(env.get(name) for name in REQUIRED_ENV):
            return None
        project, dataset = env[ENV_PROJECT], env[ENV_DATASET]
        if not _PROJECT_RE.fullmatch(project):
            raise UsageError(f"{ENV_PROJECT}={project!r} is not a Sanity project id")
        if not _DATASET_RE.fullmatch(dataset):
            raise UsageError(
                f"{ENV_DATASET}={dataset!r} is not a dataset name (lowercase letters, digits, "
                "'_' and '-', at most 64 characters)"
            )
        version = (env.get(ENV_API_VERSION) or DEFAULT_API_VERSION).removeprefix("v")
        if not _VERSION_RE.fullmatch(version):
            raise UsageError(f"{ENV_API_VERSION}={version!r} is not YYYY-MM-DD (or 1, X)")
        api_version_floor(ENV_API_VERSION, version)
        host = env.get(ENV_API_HOST) or ""
        if host and not host.startswith(("https://", "http://")):
            raise UsageError(f"{ENV_API_HOST}={host!r} must be an http(s):// URL")
        return cls(project, dataset, env[ENV_TOKEN], version, host)


def missing_settings(environ: Mapping[str, str] | None = None) -> list[str]:
    env = settings.as_environ(ALL_ENV) if environ is None else environ
    return [name for name in REQUIRED_ENV if not env.get(name)]


def error_description(response: httpx.Response) -> str:
    """Sanity's own words for an error: ``error.description`` (mutation and query errors,
    with the first item's description) or a Boom-style ``message``."""
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}"
    if not isinstance(body, dict):
        return f"HTTP {response.status_code}"
    error = body.get("error")
    if isinstance(error, dict):
        text = str(error.get("description") or error.get("type") or "")
        items = error.get("items")
        if isinstance(items, list) and items and isinstance(items[0], dict):
            first = items[0].get("error")
            if isinstance(first, dict) and first.get("description") not in (None, text):
                text = f"{text} ({first['description']})" if text else str(first["description"])
        return text or f"HTTP {response.status_code}"
    return str(body.get("message") or error or f"HTTP {response.status_code}")


def _classify(response: httpx.Response) -> HttpError | None:
    status = response.status_code
    if status < 400 or status == 409 or status in SANITY_TRANSIENT:
        return None
    request = response.request
    return TerminalHttpError(
        f"sanity: HTTP {status} for {request.method} {request.url.path}: "
        f"{error_description(response)}",
        str(request.url),
        status,
    )


def _revision_conflict(body: Any) -> RevisionConflict | None:
    """A 409 that says a document's revision moved (not, e.g., a reference error)."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None
    description = str(error.get("description") or "")
    raw_items = error["items"] if isinstance(error.get("items"), list) else []
    items: list[dict[str, Any]] = [
        i["error"] for i in raw_items if isinstance(i, dict) and isinstance(i.get("error"), dict)
    ]
    moved = [
        i
        for i in items
        if i.get("type") == "documentRevisionIDDoesNotMatchError"
        or "unexpected revision" in str(i.get("description", ""))
    ]
    if moved or (not items and "unexpected revision" in description):
        return RevisionConflict(description, [str(i["id"]) for i in moved if i.get("id")])
    return None


class SanityHttpTarget:
    def __init__(self, settings: SanitySettings, http: HttpFactory) -> None:
        self.settings = settings
        self.name = f"sanity:{settings.project_id}/{settings.dataset}"
        self._data = f"{settings.base_url}/v{settings.api_version}/data"
        self._client = http.client(
            "sanity",
            [settings.base_url],
            headers={"Authorization": f"Bearer {settings.token}"},
            policy=dataclasses.replace(http.policy, transient_statuses=SANITY_TRANSIENT),
            classify=_classify,
        )
        # Mutations: one attempt per request; commit() decides what may be sent again.
        self._policy = http.policy
        self._mutator = http.client(
            "sanity",
            [settings.base_url],
            headers={"Authorization": f"Bearer {settings.token}"},
            policy=dataclasses.replace(
                http.policy, transient_statuses=SANITY_TRANSIENT, max_attempts=1
            ),
            classify=_classify,
        )

    # -- reads -----------------------------------------------------------------------------
    def _query(self, query: str, params: Mapping[str, Any]) -> Any:
        response = self._client.request(
            "POST",
            f"{self._data}/query/{self.settings.dataset}",
            params={"perspective": "raw", "returnQuery": "false"},
            json_body={"query": query, "params": dict(params)},
        )
        body = parse_json(response)
        if not isinstance(body, dict) or "result" not in body:
            raise TargetError(f"{self.name}: a query answered without a result")
        return body["result"]

    def _paged(
        self, prefix: str, projection: str, excluded: Sequence[str] = ()
    ) -> list[dict[str, Any]]:
        """Every document whose ``_id`` starts with ``prefix`` and none of ``excluded``."""
        params: dict[str, Any] = {"prefix": prefix}
        exclude = ""
        for number, other in enumerate(excluded):
            params[f"excluded{number}"] = other
            exclude += f" && !string::startsWith(_id, $excluded{number})"
        query = (
            f"*[string::startsWith(_id, $prefix){exclude} && _id > $after] | order(_id) "
            f"[0...{PAGE_SIZE}] {projection}"
        )
        out: list[dict[str, Any]] = []
        after = ""
        while True:
            page = self._query(query, {**params, "after": after})
            if not isinstance(page, list):
                raise TargetError(f"{self.name}: a listing query did not answer a list")
            out.extend(d for d in page if isinstance(d, dict) and isinstance(d.get("_id"), str))
            if len(page) < PAGE_SIZE:
                return out
            after = str(page[-1]["_id"])

    def read_state(self, namespace: str, foreign: Sequence[str] = ()) -> TargetState:
        documents = self._paged(namespace + ".", PLAN_FIELDS, [f + "." for f in foreign])
        drafts = self._paged(
            "drafts." + namespace + ".", "{_id}", ["drafts." + f + "." for f in foreign]
        )
        versions, releases = read_versions(self._query, namespace, foreign, PAGE_SIZE)
        return TargetState(
            documents={d["_id"]: target_document(d) for d in documents},
            drafts=frozenset(d["_id"][len("drafts.") :] for d in drafts),
            versions=versions,
            releases=releases,
        )

    def read_documents(self, ids: Sequence[str]) -> dict[str, TargetDocument]:
        out: dict[str, TargetDocument] = {}
        base = f"{self._data}/doc/{self.settings.dataset}"
        for chunk in id_chunks(ids, base):  # no URL over ~11 kB, as Sanity's own tools
            response = self._client.request("GET", f"{base}/{','.join(chunk)}")
            body = parse_json(response)
            documents = body.get("documents") if isinstance(body, dict) else None
            if not isinstance(documents, list):
                raise TargetError(f"{self.name}: the doc endpoint answered without documents")
            for document in documents:
                if isinstance(document, dict) and document.get("_id") in chunk:
                    out[document["_id"]] = target_document(document, full=True)
        return out

    def count_unrelated(self, namespace: str, foreign: Sequence[str] = ()) -> int:
        ours, params = ours_filter(foreign)
        result = self._query(f"count(*[!{ours}])", {"ns": namespace + ".", **params})
        if not isinstance(result, int):
            raise TargetError(f"{self.name}: a count query did not answer a number")
        return result

    def touched_by(
        self, namespace: str, transaction_ids: Sequence[str], foreign: Sequence[str] = ()
    ) -> Touched:
        if not transaction_ids:
            return Touched(0)
        ours, extra = ours_filter(foreign)
        params = {"ns": namespace + ".", "txids": list(transaction_ids), **extra}
        count = self._query(f"count(*[!{ours} && _rev in $txids])", params)
        if not isinstance(count, int):
            raise TargetError(f"{self.name}: a count query did not answer a number")
        ids: list[str] = []
        if count:
            listed = self._query(
                f"*[!{ours} && _rev in $txids] | order(_id) [0...{TOUCHED_SHOWN}]._id", params
            )
            ids = [str(i) for i in listed] if isinstance(listed, list) else []
        return Touched(count, ids)

    def now(self) -> str | None:
        result = self._query("now()", {})
        return result if isinstance(result, str) else None

    def written_since(
        self,
        namespace: str,
        since: str,
        transaction_ids: Sequence[str],
        foreign: Sequence[str] = (),
    ) -> Touched:
        ours, extra = ours_filter(foreign)
        params = {"ns": namespace + ".", "since": since, "txids": list(transaction_ids), **extra}
        where = f"!{ours} && !(_rev in $txids) && dateTime(_updatedAt) >= dateTime($since)"
        found = self._query(
            f'{{"count": count(*[{where}]), '
            f'"ids": *[{where}] | order(_id) [0...{TOUCHED_SHOWN}]._id}}',
            params,
        )
        if not isinstance(found, dict) or not isinstance(found.get("count"), int):
            raise TargetError(f"{self.name}: a count query did not answer a number")
        ids = found.get("ids")
        return Touched(found["count"], [str(i) for i in ids] if isinstance(ids, list) else [])

    def writes_by_others(
        self, namespace: str, transaction_ids: Sequence[str], foreign: Sequence[str] = ()
    ) -> tuple[int, list[Write]]:
        """Documents updated since the first of ``transaction_ids`` committed whose
        ``_rev`` is none of them (how many, and up to ``writers.SHOWN`` with the author the
        transaction log gives; ``pipelines.publish.writers``)."""
        if not transaction_ids:
            return 0, []
        params: dict[str, Any] = {"txids": list(transaction_ids)}
        since = self._query("*[_rev in $txids] | order(_updatedAt asc) [0]._updatedAt", params)
        if not isinstance(since, str):
            return 0, []
        params["since"] = since
        others = "*[_updatedAt >= $since && !(_rev in $txids)]"
        count = self._query(f"count({others})", params)
        listed = self._query(f"{others} | order(_id) [0...{SHOWN_WRITES}] {{_id, _rev}}", params)
        found = [d for d in listed if isinstance(d, dict)] if isinstance(listed, list) else []
        if not isinstance(count, int) or not found:
            return (count if isinstance(count, int) else 0), []
        ids = [str(d["_id"]) for d in found]
        response = self._client.request(
            "GET",
            f"{self._data}/history/{self.settings.dataset}/transactions/{','.join(ids)}",
            params={"excludeContent": "true"},
            ok=(200, 401, 403, 404),
        )
        lines = []
        if response.status_code == 200:
            for text in response.text.splitlines():
                try:
                    line = json.loads(text)
                except ValueError:
                    continue
                if isinstance(line, dict):
                    lines.append(line)
        return count, writes(found, authors(lines), lambda i: is_ours(i, namespace, foreign))

    # -- writes ----------------------------------------------------------------------------
    def _send_mutations(self, transaction: Transaction) -> httpx.Response:
        """The answer to the transaction's one mutate request, never repeated;
        :class:`CommitUncertain` when the answer was lost, is a 5xx or a 429, or says the
        transaction id is taken."""
        try:
            response = self._mutator.request(
                "POST",
                f"{self._data}/mutate/{self.settings.dataset}",
                params={"returnIds": "true", "returnDocuments": "false", "visibility": "sync"},
                json_body={"mutations": transaction.mutations, "transactionId": transaction.id},
                ok=(200, 409, 429, *UNCERTAIN_STATUSES),
            )
        except TerminalHttpError as exc:
            if not isinstance(exc.__cause__, TransientHttpError):
                raise
            raise CommitUncertain(
                f"{self.name}: no answer to transaction {transaction.id} "
                f"({exc.__cause__}); it may have committed"
            ) from None
        status = response.status_code
        if status == 429:
            # Sanity's own client never retries a mutation, not even after a 429: nothing
            # says what the server did before it answered. Wait as asked, then let the push
            # read the documents back and resend only what provably did not commit.
            waited = parse_retry_after(response.headers.get("retry-after"))
            policy = self._policy
            self._mutator.sleep(min(waited or policy.backoff_initial, policy.max_retry_after))
            raise MutationRateLimited(
                f"{self.name}: HTTP 429 for transaction {transaction.id} (rate limited); "
                "it may have committed"
            )
        if status in UNCERTAIN_STATUSES:
            raise CommitUncertain(
                f"{self.name}: HTTP {status} for transaction {transaction.id} "
                f"({error_description(response)}); it may have committed"
            )
        if status == 409 and transaction_id_taken(response):
            raise CommitUncertain(
                f"{self.name}: transaction {transaction.id} was refused as already used "
                f"({error_description(response)}); it may have committed earlier"
            )
        return response

    def commit(self, transaction: Transaction) -> Committed:
        response = self._send_mutations(transaction)
        body = parse_json(response)
        if response.status_code == 409:
            conflict = _revision_conflict(body)
            if conflict is not None:
                raise conflict
            raise TargetError(
                f"{self.name} refused transaction {transaction.id}: {error_description(response)}"
            )
        if not isinstance(body, dict):
            raise TargetError(f"{self.name}: a mutation answered {type(body).__name__}")
        results = body["results"] if isinstance(body.get("results"), list) else []
        operations = {
            str(r["id"]): str(r.get("operation"))
            for r in results
            if isinstance(r, dict) and "id" in r
        }
        return Committed(str(body.get("transactionId") or transaction.id), operations)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self._client.close()
        self._mutator.close()
