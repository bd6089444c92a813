"""Where a manifest's claims come from: its ``[claims]`` file, or its Sanity dataset.

With ``groq = …`` the query runs against the dataset in ``SANITY_*`` (read only). Each result
row is one claim; its ``doc_id`` is either a field of the row, or is found through the
published document the row points at (``document``: an ``_id`` or a reference): the
``provenance.docId`` that publishing wrote on it. Rows are named by their ``_id`` in
messages.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from pipelines import USER_AGENT
from pipelines.checks.claims_file import DEFAULT_FIELDS, ClaimSet, collect, read_claims_file
from pipelines.manifest import ClaimsTable, Manifest
from pipelines.publish.targets.sanity_http import SanitySettings, missing_settings
from sources.http import HttpClient, HttpFactory, parse_json
from warehouse.errors import HttpError, TargetError, TerminalHttpError, UsageError

# Published documents looked up per query when claims point at them.
LOOKUP_CHUNK = 500
_PROVENANCE = '*[_id in $ids]{_id, "docId": provenance.docId}'


def manifest_claims(manifest: Manifest, http: HttpFactory | None = None) -> ClaimSet | None:
    """The claims ``[claims]`` names, filed under the corpus's name; None without one."""
    table = manifest.claims
    if table is None:
        return None
    if table.file is not None:
        return read_claims_file(manifest.path.parent / table.file, table.fields, manifest.name)
    assert table.groq is not None
    own = http is None
    http = http or HttpFactory(user_agent=USER_AGENT)
    try:
        return sanity_claims(manifest.name, table, http)
    finally:
        if own:
            http.close()


def _classify(response: httpx.Response) -> HttpError | None:
    if response.status_code < 400 or response.status_code in (429, 500, 502, 503, 504):
        return None
    return TerminalHttpError(
        f"sanity: HTTP {response.status_code} for a claims query",
        str(response.request.url),
        response.status_code,
    )


class _Dataset:
    def __init__(self, settings: SanitySettings, http: HttpFactory) -> None:
        self.settings = settings
        self._url = f"{settings.base_url}/v{settings.api_version}/data/query/{settings.dataset}"
        self._client: HttpClient = http.client(
            "sanity",
            [settings.base_url],
            headers={"Authorization": f"Bearer {settings.token}"},
            classify=_classify,
        )

    def query(self, groq: str, params: Mapping[str, Any] | None = None) -> Any:
        response = self._client.request(
            "POST",
            self._url,
            params={"perspective": "published"},
            json_body={"query": groq, "params": dict(params or {})},
        )
        body = parse_json(response)
        if not isinstance(body, dict) or "result" not in body:
            raise TargetError("sanity: the claims query answered without a result")
        return body["result"]


def _ref(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("_ref")
    return value if isinstance(value, str) and value else None


def sanity_claims(name: str, table: ClaimsTable, http: HttpFactory) -> ClaimSet:
    settings = SanitySettings.from_env()
    if settings is None:
        raise UsageError(
            "[claims] groq reads the Sanity dataset: set " + ", ".join(missing_settings())
        )
    dataset = _Dataset(settings, http)
    assert table.groq is not None
    result = dataset.query(table.groq)
    if not isinstance(result, list):
        raise UsageError("[claims] groq must return a list of claims (e.g. *[...]{...})")
    fields = {**DEFAULT_FIELDS, "document": "document", **table.fields}
    pointed = sorted(
        {
            ref
            for row in result
            if isinstance(row, dict) and (ref := _ref(row.get(fields["document"])))
        }
    )
    doc_ids: dict[str, str] = {}
    for start in range(0, len(pointed), LOOKUP_CHUNK):
        found = dataset.query(_PROVENANCE, {"ids": pointed[start : start + LOOKUP_CHUNK]})
        for doc in found if isinstance(found, list) else []:
            if isinstance(doc, dict) and isinstance(doc.get("docId"), str):
                doc_ids[str(doc["_id"])] = doc["docId"]
    return collect(name, _rows(result, fields, doc_ids), fields)


def _rows(
    result: list[Any], fields: Mapping[str, str], doc_ids: Mapping[str, str]
) -> Iterator[tuple[str, Mapping[str, Any] | str]]:
    for index, row in enumerate(result):
        if not isinstance(row, dict):
            yield f"result {index}", "not an object"
            continue
        origin = f"_id {row['_id']}" if isinstance(row.get("_id"), str) else f"result {index}"
        if row.get(fields["doc_id"]) in (None, ""):
            ref = _ref(row.get(fields["document"]))
            if ref is not None:
                if ref not in doc_ids:
                    yield origin, f"points at {ref}, which has no provenance.docId in the dataset"
                    continue
                row = {**row, fields["doc_id"]: doc_ids[ref]}
        yield origin, row
