"""The Content Lake fake whose queries groq-js evaluates (``tests/node/lake.mjs``), started
as a loopback server by the fixtures in ``tests/fixtures/sanity.py``.

``NodeLake`` steers it the way an editor or a failing network would: ``put``, ``edit`` and
``remove`` documents, ``before_mutation`` (an editor's mutations, applied just before the
next transaction), ``write_alongside`` (the next transaction also patches another
document), ``fault`` (429/500 before anything is applied; commit and then drop the
connection or answer 503), and reads its ``documents``, ``transactions`` and
``requests``. ``env()`` points receipts' Sanity target at it. It enforces Sanity's limits as
``lake.mjs`` documents them: a mutate body over 4,000,000 bytes is answered 413, an id over 128
characters 400, a URL over 12,288 characters 414 (such requests are listed with ``status``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

NODE_DIR = Path(__file__).resolve().parent.parent / "tests" / "node"
INSTALL = "make node-deps   (npm ci in tests/node)"
PROJECT = "fakeproj"
DATASET = "production"
TOKEN = "sk-fake-node-lake-token-0123456789abcdef"


def node_or_skip() -> str:
    """The node binary when node and the test packages are installed; otherwise skip (and
    in CI, fail: CI installs them)."""
    node = shutil.which("node")
    if node is None or not (NODE_DIR / "node_modules" / "groq-js").is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"node or the tests' Node packages are missing: {INSTALL}")
        pytest.skip(f"needs node and the tests' Node packages: {INSTALL}")
    return node


class GroqError(ValueError):
    """groq-js refused a query."""


@dataclass
class NodeLake:
    url: str
    token: str = TOKEN
    dataset: str = DATASET

    def env(self) -> dict[str, str]:
        return {
            "SANITY_PROJECT_ID": PROJECT,
            "SANITY_DATASET": self.dataset,
            "SANITY_TOKEN": self.token,
            "SANITY_API_HOST": self.url,
        }

    def _control(self, action: str, body: dict[str, Any] | None = None) -> Any:
        response = httpx.post(f"{self.url}/__control/{action}", json=body or {}, timeout=30)
        response.raise_for_status()
        return response.json()

    # -- an editor in the Studio ---------------------------------------------------------------
    def put(self, document: dict[str, Any]) -> str:
        return str(self._control("put", {"document": document})["rev"])

    def edit(self, doc_id: str, **fields: Any) -> str:
        return str(self._control("edit", {"id": doc_id, "set": fields})["rev"])

    def remove(self, doc_id: str) -> str:
        return str(self._control("remove", {"id": doc_id})["rev"])

    # -- a failing network ---------------------------------------------------------------------
    def fault(
        self,
        endpoint: str,
        *,
        when: str = "before",
        status: int = 503,
        drop: bool = False,
        times: int = 1,
        after: int = 0,
        retry_after: float | None = None,
    ) -> None:
        """``when="before"``: answer ``status`` before applying anything; ``when="after"``
        (mutations): commit, then drop the connection or answer ``status``; each of the
        ``times`` times once ``after`` more requests to ``endpoint`` were served normally."""
        body: dict[str, Any] = {
            "endpoint": f"{endpoint}:{when}",
            "status": status,
            "times": times,
            "after": after,
        }
        if drop:
            body["drop"] = True
        if retry_after is not None:
            body["retryAfter"] = retry_after
        self._control("fault", body)

    def clear_faults(self) -> None:
        """Forget every fault still to be played."""
        self._control("clear")

    def before_mutation(self, *mutations: dict[str, Any]) -> None:
        """Just before the next transaction is applied, apply these mutations, each its own
        transaction, as an editor in the Studio would between plan and push."""
        self._control("fault", {"endpoint": "mutate:editor", "mutations": list(mutations)})

    def write_alongside(self, doc_id: str, fields: dict[str, Any]) -> None:
        """Make the next transaction also patch ``doc_id`` (a server-side side effect the
        pipeline never asked for): it then carries that transaction id as ``_rev``."""
        self._control("fault", {"endpoint": "mutate:alongside", "id": doc_id, "set": fields})

    def function_reacts(self, *mutations: dict[str, Any], author: str, after: int = 0) -> None:
        """Once the next transaction (after ``after`` more) commits, apply ``mutations`` as
        one transaction of ``author``'s: a Sanity Function reacting to our mutation."""
        body = {"endpoint": "mutate:function", "mutations": list(mutations), "author": author}
        self._control("fault", {**body, "after": after})

    # -- what it holds -------------------------------------------------------------------------
    @property
    def documents(self) -> dict[str, dict[str, Any]]:
        return {d["_id"]: d for d in self._control("state")["documents"]}

    @property
    def transactions(self) -> list[str]:
        return list(self._control("state")["transactions"])

    @property
    def requests(self) -> list[dict[str, Any]]:
        return list(self._control("requests")["requests"])

    def mutation_requests(self) -> list[dict[str, Any]]:
        """The mutate requests received (``method``, ``path``, ``query``, ``body``), in
        order, whatever their answer."""
        return [r for r in self.requests if r["endpoint"] == "mutate"]

    def sent_transaction_ids(self) -> list[str]:
        return [str((r.get("body") or {}).get("transactionId")) for r in self.mutation_requests()]

    def mutations_sent(self) -> int:
        return sum(
            len((r.get("body") or {}).get("mutations", [])) for r in self.mutation_requests()
        )

    def evaluate(
        self,
        query: str,
        documents: list[dict[str, Any]],
        params: Mapping[str, Any] | None = None,
        now: str | None = None,
    ) -> Any:
        """groq-js over the given documents (for a fake that holds its own, and its clock:
        ``now``, what GROQ's ``now()`` answers); a query groq-js cannot parse or evaluate
        raises :class:`GroqError` with its description."""
        body: dict[str, Any] = {"query": query, "params": dict(params or {})}
        body["documents"] = documents
        if now is not None:
            body["now"] = now
        response = httpx.post(
            f"{self.url}/__control/eval",
            json=body,
            timeout=30,
        )
        if response.status_code == 400:
            raise GroqError(str(response.json()["error"]["description"]))
        response.raise_for_status()
        return response.json()["result"]

    def reset(self) -> None:
        self._control("reset")
