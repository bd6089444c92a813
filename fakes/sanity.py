"""A stateful fake of the Sanity Content Lake HTTP API, served through respx, for the faults
the Node fake (``fakes.node_lake``, which most tests use) cannot play: a Python
exception raised in the client (``kill_after_commit``: the process killed while a
transaction's answer is on its way).

Built from the shapes in ``shared/reference/upstream-apis.md`` §1:

- ``POST /v{version}/data/mutate/{dataset}``: ``create``, ``createIfNotExists``,
  ``createOrReplace``, ``patch`` (``set``, ``setIfMissing``, ``unset``, ``ifRevisionID``) and
  ``delete`` by id, applied atomically per transaction to an in-memory dataset; every
  document written gets ``_rev`` = the transaction id. A revision mismatch is a 409
  ``mutationError`` with a ``documentRevisionIDDoesNotMatchError`` item; a strong reference
  to a missing document, or the delete of a referenced one, is a 409 ``mutationError`` too.
- ``GET|POST /v{version}/data/query/{dataset}``: GROQ evaluated against the dataset by
  groq-js, Sanity's reference implementation (the Node fake's ``eval`` endpoint), with the
  ``published`` perspective by default from API version 2025-02-19 and ``raw`` on request;
  ``{"ms", "query", "result"}``.
- ``GET /v{version}/data/doc/{dataset}/{ids}``: ``{"documents", "omitted"}``.
- ``Authorization: Bearer <token>`` required, else a Boom-style 401.

Tests steer it with ``kill_after_commit`` and editor operations (``edit``, ``put``,
``remove``); every other fault (429/5xx before anything is applied, commit then a dropped
connection or a 503, an editor acting between plan and push, a write alongside a
transaction) is played by the Node fake.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import httpx
import respx

from fakes.node_lake import GroqError, NodeLake

HOST = "https://fake-sanity.test"
PROJECT = "fakeproj"
DATASET = "production"
TOKEN = "sk-fake-token-for-tests-0123456789abcdef"
API_VERSION = "2025-02-19"


class MutationFailed(Exception):
    def __init__(self, status: int, items: list[dict[str, Any]], description: str) -> None:
        super().__init__(description)
        self.status = status
        self.items = items
        self.description = description


@dataclass
class Request:
    method: str
    path: str
    body: Any


@dataclass
class FakeContentLake:
    groq: NodeLake  # evaluates every query (groq-js)
    host: str = HOST
    dataset: str = DATASET
    token: str = TOKEN
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)
    transactions: list[dict[str, Any]] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    _after_commit: list[BaseException | None] = field(default_factory=list)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _tx_counter: int = 0

    # -- configuration for tests -------------------------------------------------------------
    def env(self) -> dict[str, str]:
        return {
            "SANITY_PROJECT_ID": PROJECT,
            "SANITY_DATASET": self.dataset,
            "SANITY_TOKEN": self.token,
            "SANITY_API_HOST": self.host,
        }

    def kill_after_commit(self, *, after: int = 0) -> None:
        """Once ``after`` mutate requests have been answered normally, commit the next one
        and raise ``KeyboardInterrupt`` in the client (the process killed while the answer
        was on its way)."""
        self._after_commit.extend([None] * after)
        self._after_commit.append(KeyboardInterrupt())

    def put(self, document: dict[str, Any]) -> str:
        return self.apply([{"createOrReplace": document}])

    def edit(self, doc_id: str, **fields: Any) -> str:
        return self.apply([{"patch": {"id": doc_id, "set": fields}}])

    def remove(self, doc_id: str) -> str:
        return self.apply([{"delete": {"id": doc_id}}])

    def mutation_requests(self) -> list[Request]:
        return [r for r in self.requests if "/data/mutate/" in r.path]

    def mutations_sent(self) -> int:
        return sum(len(r.body.get("mutations", [])) for r in self.mutation_requests())

    # -- the dataset -----------------------------------------------------------------------
    def _next_tx(self) -> str:
        self._tx_counter += 1
        return f"fakeTx{self._tx_counter:06d}"

    def _timestamp(self) -> str:
        return f"2026-11-01T06:{self._tx_counter // 60 % 60:02d}:{self._tx_counter % 60:02d}Z"

    def apply(self, mutations: list[dict[str, Any]], transaction_id: str | None = None) -> str:
        """Apply a transaction atomically; raise :class:`MutationFailed` and change nothing
        if any mutation fails."""
        with self._lock:
            tx = transaction_id or self._next_tx()
            if any(t["id"] == tx for t in self.transactions):
                raise MutationFailed(
                    409,
                    [],
                    f'The mutation(s) failed: transaction ID "{tx}" has already been used',
                )
            if transaction_id is not None:
                self._tx_counter += 1
            working = {k: copy.deepcopy(v) for k, v in self.documents.items()}
            results, written = self._apply_all(working, mutations)
            self._check_references(working, written, {r["id"] for r in results})
            stamp = self._timestamp()
            for doc_id in written:
                if doc_id in working:
                    working[doc_id]["_rev"] = tx
                    working[doc_id]["_updatedAt"] = stamp
                    working[doc_id].setdefault("_createdAt", stamp)
            self.documents = working
            self.transactions.append({"id": tx, "mutations": mutations, "results": results})
            return tx

    def _apply_all(
        self, working: dict[str, dict[str, Any]], mutations: list[dict[str, Any]]
    ) -> tuple[list[dict[str, str]], set[str]]:
        results: list[dict[str, str]] = []
        written: set[str] = set()
        for index, mutation in enumerate(mutations):
            (kind, body), *rest = mutation.items()
            if rest:
                raise MutationFailed(400, [], "a mutation must have exactly one kind")
            operation, doc_id = self._apply_one(working, kind, body, index)
            results.append({"id": doc_id, "operation": operation})
            if operation in ("create", "update"):
                written.add(doc_id)
            elif operation == "delete":
                written.discard(doc_id)
        return results, written

    def _apply_one(
        self, working: dict[str, dict[str, Any]], kind: str, body: dict[str, Any], index: int
    ) -> tuple[str, str]:
        if kind in ("create", "createIfNotExists", "createOrReplace"):
            doc_id, doc_type = body.get("_id"), body.get("_type")
            if not isinstance(doc_id, str) or not isinstance(doc_type, str):
                raise MutationFailed(400, [], f"{kind} needs a string _id and _type")
            exists = doc_id in working
            if kind == "create" and exists:
                raise _item_error(
                    index,
                    "documentAlreadyExistsError",
                    f'Document by ID "{doc_id}" already exists',
                    id=doc_id,
                )
            if kind == "createIfNotExists" and exists:
                return "none", doc_id
            document = {k: copy.deepcopy(v) for k, v in body.items() if k != "_rev"}
            if exists:
                document["_createdAt"] = working[doc_id].get("_createdAt")
            working[doc_id] = document
            return ("update" if exists else "create"), doc_id
        if kind == "patch":
            doc_id = body.get("id")
            if not isinstance(doc_id, str):
                raise MutationFailed(400, [], "patch needs an id")
            document = working.get(doc_id)
            if document is None:
                raise _item_error(
                    index,
                    "documentNotFoundError",
                    f'The document with the ID "{doc_id}" was not found',
                    status=404,
                    id=doc_id,
                )
            expected = body.get("ifRevisionID")
            if expected is not None and document.get("_rev") != expected:
                raise _item_error(
                    index,
                    "documentRevisionIDDoesNotMatchError",
                    f'Document "{doc_id}" has unexpected revision ID '
                    f'("{document.get("_rev")}"), expected "{expected}"',
                    id=doc_id,
                    currentRevisionID=document.get("_rev"),
                    expectedRevisionID=expected,
                )
            for path, value in (body.get("setIfMissing") or {}).items():
                if _get_path(document, path) is None:
                    _set_path(document, path, copy.deepcopy(value))
            for path, value in (body.get("set") or {}).items():
                _set_path(document, path, copy.deepcopy(value))
            for path in body.get("unset") or []:
                _unset_path(document, path)
            return "update", doc_id
        if kind == "delete":
            if "query" in body:
                raise MutationFailed(400, [], "this fake deletes by id only")
            doc_id = body.get("id")
            if not isinstance(doc_id, str):
                raise MutationFailed(400, [], "delete needs an id")
            working.pop(doc_id, None)
            return "delete", doc_id
        raise MutationFailed(400, [], f"unknown mutation {kind!r}")

    def _check_references(
        self, working: dict[str, dict[str, Any]], written: set[str], touched: set[str]
    ) -> None:
        for doc_id in sorted(written):
            for ref in _strong_refs(working.get(doc_id)):
                if ref not in working:
                    raise MutationFailed(
                        409,
                        [],
                        f'The mutation(s) failed: Document "{doc_id}" references '
                        f'non-existent document "{ref}"',
                    )
        deleted = {d for d in touched if d not in working}
        for other_id, other in working.items():
            for ref in _strong_refs(other):
                if ref in deleted:
                    raise MutationFailed(
                        409,
                        [],
                        f'The mutation(s) failed: Document "{ref}" cannot be deleted as there '
                        f'are references to it from "{other_id}"',
                    )

    def visible(self, perspective: str, version: str = API_VERSION) -> list[dict[str, Any]]:
        """raw: every document (``versions.*`` only from API version 2025-02-19); else the
        published ones, without the ``_.`` system documents (as the Node fake, which also
        plays the drafts perspective and release stacks)."""
        documents = [self.documents[k] for k in sorted(self.documents)]
        if perspective == "raw":
            old = version < "2025-02-19"
            return [d for d in documents if not (old and d["_id"].startswith("versions."))]
        return [d for d in documents if not d["_id"].startswith(("drafts.", "versions.", "_."))]

    # -- HTTP ------------------------------------------------------------------------------
    def _authorised(self, request: httpx.Request) -> httpx.Response | None:
        if request.headers.get("authorization") == f"Bearer {self.token}":
            return None
        return httpx.Response(
            401,
            json={
                "statusCode": 401,
                "error": "Unauthorized",
                "message": "Session not found",
            },
        )

    def _route(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        body: Any = json.loads(request.content) if request.content else None
        with self._lock:
            self.requests.append(Request(request.method, path, body))
        denied = self._authorised(request)
        if denied is not None:
            return denied
        parts = path.strip("/").split("/")
        if len(parts) < 4 or parts[1] != "data" or parts[3] != self.dataset:
            return httpx.Response(404, json={"error": "Not Found", "statusCode": 404})
        endpoint = parts[2]
        if endpoint == "mutate" and request.method == "POST":
            return self._mutate(request, body)
        if endpoint == "query":
            return self._query(request, body, parts[0].removeprefix("v"))
        if endpoint == "doc" and len(parts) == 5:
            return self._doc(parts[4])
        return httpx.Response(404, json={"error": "Not Found", "statusCode": 404})

    def _mutate(self, request: httpx.Request, body: Any) -> httpx.Response:
        with self._lock:
            try:
                tx = self.apply(body["mutations"], body.get("transactionId"))
            except MutationFailed as exc:
                return httpx.Response(
                    exc.status,
                    json={
                        "error": {
                            "type": "mutationError",
                            "description": exc.description,
                            "items": exc.items,
                        }
                    },
                )
            results = self.transactions[-1]["results"]
            lost = self._after_commit.pop(0) if self._after_commit else None
        if lost is not None:
            raise lost
        answer: dict[str, Any] = {"transactionId": tx}
        if request.url.params.get("returnIds") == "true":
            answer["results"] = results
        return httpx.Response(200, json=answer)

    def _query(self, request: httpx.Request, body: Any, version: str) -> httpx.Response:
        if request.method == "POST":
            query, params = body.get("query"), body.get("params") or {}
        else:
            query = request.url.params.get("query")
            params = {
                k[1:]: json.loads(v) for k, v in request.url.params.multi_items() if k[0] == "$"
            }
        default = "published" if version >= "2025-02-19" else "raw"
        perspective = request.url.params.get("perspective", default)
        try:
            with self._lock:
                documents = self.visible(perspective, version)
                now = self._timestamp()[:-1] + ".001Z"  # after the last write
            result = self.groq.evaluate(str(query), documents, params, now)
        except GroqError as exc:
            return httpx.Response(
                400,
                json={
                    "error": {
                        "type": "queryParseError",
                        "description": str(exc),
                        "query": query,
                    }
                },
            )
        answer: dict[str, Any] = {"ms": 1, "result": result}
        if request.url.params.get("returnQuery") != "false":
            answer["query"] = query
        return httpx.Response(200, json=answer)

    def _doc(self, ids: str) -> httpx.Response:
        wanted = [unquote(i) for i in ids.split(",") if i]
        with self._lock:
            found = [copy.deepcopy(self.documents[i]) for i in wanted if i in self.documents]
        omitted = [{"id": i, "reason": "existence"} for i in wanted if i not in self.documents]
        return httpx.Response(200, json={"documents": found, "omitted": omitted})

    def mount(self, router: respx.MockRouter) -> None:
        """Route requests to ``self.host`` on ``router`` to this fake (beside other fakes),
        and let its queries reach groq-js on the loopback."""
        router.route(host=self.host.split("://", 1)[1]).mock(side_effect=self._route)
        router.route(host=httpx.URL(self.groq.url).host).pass_through()

    @contextmanager
    def serve(self) -> Iterator[FakeContentLake]:
        """Serve this fake while the block runs; any other host is refused by respx."""
        with respx.mock(assert_all_called=False) as router:
            self.mount(router)
            yield self


def _item_error(
    index: int, type_: str, description: str, status: int = 409, **extra: Any
) -> MutationFailed:
    item = {"error": {"type": type_, "description": description, **extra}, "index": index}
    return MutationFailed(status, [item], f"The mutation(s) failed: {description}")


def _strong_refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        ref = value.get("_ref")
        if isinstance(ref, str) and not value.get("_weak"):
            yield ref
        for item in value.values():
            yield from _strong_refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strong_refs(item)


def _get_path(document: dict[str, Any], path: str) -> Any:
    value: Any = document
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _set_path(document: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    target = document
    for part in parents:
        target = target.setdefault(part, {})
    target[last] = value


def _unset_path(document: dict[str, Any], path: str) -> None:
    *parents, last = path.split(".")
    target: Any = document
    for part in parents:
        target = target.get(part) if isinstance(target, dict) else None
    if isinstance(target, dict):
        target.pop(last, None)
