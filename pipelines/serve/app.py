"""The ``receipts serve`` application: a Starlette app over a warehouse opened read-only for
each request.

Each page (:mod:`pipelines.serve.pages`) answers at its path as HTML and at the same path
plus ``.json`` as JSON. A DuckDB file is opened, read and closed per request, so a writer
(a refresh) is never kept waiting by the server between requests; while a writer holds it,
a page answers 503 at once, saying who holds it. A DuckLake warehouse is read while
refreshes write. Unknown documents, revisions and claims are 404; parameters that cannot be
read are 400, naming the parameter; no error shows a traceback.

Upstream text reaches a page only through autoescaping templates, with invisible and control
characters marked (:func:`pipelines.serve.text.marked`), under a Content-Security-Policy that
allows no script at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pipelines import logline
from pipelines.serve import pages
from pipelines.serve.text import marked
from warehouse import backends
from warehouse.errors import (
    BadParameter,
    NotFound,
    ReceiptsError,
    WarehouseBusy,
    WarehouseError,
)
from warehouse.lock import FileLock
from warehouse.store import Warehouse, _local_path, resolve_location

# No script, no inline style, nothing from elsewhere: a page is its HTML and serve.css.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}
RETRY_AFTER_SECONDS = 5


def doc_url(doc_id: str) -> str:
    """A document's page: ``/documents/<doc_id>``, the id's slashes kept."""
    return "/documents/" + quote(doc_id, safe="/")


def claim_url(claim_id: str) -> str:
    return "/claims/" + quote(claim_id, safe="")


def with_page(query: Any, page: int) -> str:
    """The query string of this page's query with ``page`` set."""
    items = [(k, v) for k, v in query.multi_items() if k != "page"]
    return urlencode([*items, ("page", str(page))])


ENVIRONMENT = Environment(
    loader=PackageLoader("pipelines.serve", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
ENVIRONMENT.filters.update(marked=marked, doc_url=doc_url, claim_url=claim_url)
ENVIRONMENT.globals.update(doc_url=doc_url, claim_url=claim_url, with_page=with_page)


class SecurityHeaders:
    """Every response carries the Content-Security-Policy and the headers of
    :data:`SECURITY_HEADERS` (errors and the stylesheet included)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = CONTENT_SECURITY_POLICY

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                extra = {"content-security-policy": policy, **SECURITY_HEADERS}
                headers += [
                    (k.encode(), v.encode()) for k, v in extra.items() if k.encode() not in names
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


class Server:
    """The pages of one warehouse: ``location`` as ``--warehouse`` takes it."""

    def __init__(self, location: str | None, data_path: str | None) -> None:
        self.location = resolve_location(location)
        self.data_path = data_path
        target = backends.parse(self.location, data_path)
        self.local_file = None if target.is_lake else _local_path(self.location)

    @contextmanager
    def reading(self) -> Iterator[Warehouse]:
        """The warehouse, open read-only for one request. On a DuckDB file a writer's lock
        is :class:`WarehouseBusy` at once (no waiting in a request); the reader's shared
        lock is held until the request has read what it needs."""
        probe = None
        if self.local_file is not None and self.local_file.exists():
            probe = FileLock(self.local_file, shared=True, wait=0, notify=lambda _line: None)
            probe.acquire()
        try:
            with (
                Warehouse.open(self.location, read_only=True, data_path=self.data_path) as wh,
                wh.read_snapshot(),
            ):
                yield wh
        finally:
            if probe is not None:
                probe.release()

    # -- responses -----------------------------------------------------------------------
    def respond(
        self,
        request: Request,
        read: Callable[[Warehouse], pages.Page],
        as_json: bool,
        json_after: Callable[[], bool] | None = None,
    ) -> Response:
        """The page ``read`` returns, as HTML or JSON (``json_after``: as it says once the
        page is read); a failure as its error page."""
        try:
            with self.reading() as wh:
                page = read(wh)
            if json_after is not None:
                as_json = json_after()
            if as_json:
                return json_response(page.data)
            return self.html(request, page.template, page.title, page.data | page.extra)
        except Exception as exc:  # every failure is a page, never a traceback
            return self.error(request, exc, as_json)

    def html(
        self,
        request: Request,
        template: str,
        title: str,
        context: dict[str, Any],
        status: int = 200,
    ) -> HTMLResponse:
        text = ENVIRONMENT.get_template(template).render(
            page_title=title,
            served=self.location,
            path=request.url.path,
            json_url=json_twin(request),
            query=request.query_params,
            **context,
        )
        return HTMLResponse(text, status_code=status)

    def error(self, request: Request, exc: Exception, as_json: bool) -> Response:
        status, kind, message = classify(exc)
        if status == 500 and kind == "InternalError":
            logline.emit(
                f"receipts: internal error serving {request.url.path}: {type(exc).__name__}: {exc}",
                event="serve.internal_error",
                level="error",
                error_type=type(exc).__name__,
            )
        headers = {"retry-after": str(RETRY_AFTER_SECONDS)} if status == 503 else None
        parameter = exc.name if isinstance(exc, BadParameter) else None
        body = {
            "error": {"status": status, "type": kind, "message": message, "parameter": parameter}
        }
        if as_json:
            return json_response(body, status=status, headers=headers)
        response = self.html(
            request,
            "error.html",
            f"{status} {ERROR_TITLES[status]}",
            {"status": status, "message": message, "parameter": parameter, "kind": kind},
            status=status,
        )
        if headers:
            response.headers.update(headers)
        return response


ERROR_TITLES = {
    400: "bad request",
    404: "not found",
    500: "internal error",
    503: "warehouse unavailable",
}


def classify(exc: Exception) -> tuple[int, str, str]:
    """The status, error type and message of a failed request."""
    if isinstance(exc, BadParameter):
        return 400, "BadParameter", str(exc)
    if isinstance(exc, NotFound):
        return 404, "NotFound", str(exc)
    if isinstance(exc, WarehouseBusy):
        return 503, "WarehouseBusy", str(exc)
    if isinstance(exc, WarehouseError):
        return 503, type(exc).__name__, str(exc)
    if isinstance(exc, ReceiptsError):
        return 500, type(exc).__name__, str(exc)
    return 500, "InternalError", "internal error: the server's log says more"


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    text = json.dumps(data, indent=2, sort_keys=True, default=str, ensure_ascii=False)
    return Response(text + "\n", status_code=status, media_type="application/json", headers=headers)


def json_twin(request: Request) -> str:
    """The JSON twin of the page asked for: the same path plus ``.json``, same query."""
    path = request.url.path
    twin = "/index.json" if path == "/" else path.rstrip("/") + ".json"
    query = request.url.query
    return quote(twin, safe="/") + (f"?{query}" if query else "")


# -- routes --------------------------------------------------------------------------------
_REVISION = re.compile(r"(?P<doc>.+)/revisions/(?P<n>[^/]*?)(?P<json>\.json)?")
_DIFF = re.compile(r"(?P<doc>.+)/diff(?P<json>\.json)?")


def _param(request: Request, name: str) -> str | None:
    value = request.query_params.get(name)
    return value if value else None


def create_app(location: str | None, *, data_path: str | None = None) -> Starlette:
    """The web view of the warehouse at ``location`` (``--warehouse``; None: the configured
    one), each request reading it afresh, read-only."""
    server = Server(location, data_path)
    stylesheet = resources.files("pipelines.serve").joinpath("templates/serve.css").read_bytes()

    def page(read: Callable[[Request, Warehouse], pages.Page], as_json: bool) -> Callable[..., Any]:
        async def endpoint(request: Request) -> Response:
            return await run_in_threadpool(
                server.respond, request, lambda wh: read(request, wh), as_json
            )

        return endpoint

    def both(path: str, read: Callable[[Request, Warehouse], pages.Page]) -> list[Route]:
        return [Route(path, page(read, False)), Route(f"{path}.json", page(read, True))]

    def search(request: Request, wh: Warehouse) -> pages.Page:
        return pages.search(
            wh,
            request.query_params.get("q"),
            source=_param(request, "source"),
            kind=_param(request, "kind"),
            corpus=_param(request, "corpus"),
            since=_param(request, "since"),
            page_text=request.query_params.get("page"),
        )

    def as_of(request: Request, wh: Warehouse) -> pages.Page:
        return pages.as_of(
            wh,
            _param(request, "point"),
            source=_param(request, "source"),
            corpus=_param(request, "corpus"),
            page_text=request.query_params.get("page"),
        )

    def drift(request: Request, wh: Warehouse) -> pages.Page:
        return pages.drift(
            wh,
            _param(request, "from"),
            _param(request, "to"),
            corpus=_param(request, "corpus"),
            page_text=request.query_params.get("page"),
        )

    def claims(request: Request, wh: Warehouse) -> pages.Page:
        return pages.claims(wh, _param(request, "status"), request.query_params.get("page"))

    def pushes(request: Request, wh: Warehouse) -> pages.Page:
        return pages.pushes(wh, request.query_params.get("page"))

    async def document(request: Request) -> Response:
        rest = request.path_params["rest"]
        revision = _REVISION.fullmatch(rest)
        if revision:
            doc_id, as_json = revision["doc"], revision["json"] is not None
            text = revision["n"]

            def read(wh: Warehouse) -> pages.Page:
                return pages.revision(wh, doc_id, pages.revision_number(text, "revision"))

            return await run_in_threadpool(server.respond, request, read, as_json)
        diff = _DIFF.fullmatch(rest)
        if diff:
            doc_id, as_json = diff["doc"], diff["json"] is not None
            old, new = _param(request, "from"), _param(request, "to")
            return await run_in_threadpool(
                server.respond, request, lambda wh: pages.diff(wh, doc_id, old, new), as_json
            )
        # ``x.json`` is the JSON of document ``x``; the page of a document whose id ends
        # in ``.json`` when no document ``x`` is (its JSON: ``x.json.json``).
        json_asked = rest.endswith(".json")
        shown = {"json": False}

        def read_document(wh: Warehouse) -> pages.Page:
            from warehouse.serving import document_info

            wanted = rest
            if json_asked and (
                document_info(wh, rest[:-5]) is not None or document_info(wh, rest) is None
            ):
                wanted, shown["json"] = rest[:-5], True
            return pages.document(wh, wanted)

        return await run_in_threadpool(
            server.respond, request, read_document, json_asked, lambda: shown["json"]
        )

    async def claim(request: Request) -> Response:
        rest = request.path_params["rest"]
        if rest.endswith("/bundle.json"):
            claim_id = rest[: -len("/bundle.json")]
            return await run_in_threadpool(_bundle, request, claim_id)
        as_json = rest.endswith(".json")
        claim_id = rest[:-5] if as_json else rest
        return await run_in_threadpool(
            server.respond, request, lambda wh: pages.claim(wh, claim_id), as_json
        )

    def _bundle(request: Request, claim_id: str) -> Response:
        try:
            with server.reading() as wh:
                data = pages.claim_bundle(wh, claim_id)
        except Exception as exc:  # every failure is a page, never a traceback
            return server.error(request, exc, True)
        name = claim_id.replace("/", "_").replace('"', "_")
        return Response(
            data,
            media_type="application/json",
            headers={"content-disposition": f'attachment; filename="{quote(name)}.receipt.json"'},
        )

    async def css(request: Request) -> Response:
        return Response(stylesheet, media_type="text/css")

    async def not_found(request: Request, exc: Exception) -> Response:
        as_json = request.url.path.endswith(".json")
        return server.error(request, NotFound(f"no page at {request.url.path}"), as_json)

    routes = [
        Route("/", page(lambda request, wh: pages.home(wh), False)),
        Route("/index.json", page(lambda request, wh: pages.home(wh), True)),
        Route("/.json", page(lambda request, wh: pages.home(wh), True)),
        *both("/search", search),
        *both("/as-of", as_of),
        *both("/drift", drift),
        *both("/claims", claims),
        *both("/pushes", pushes),
        *both("/plots", lambda request, wh: pages.plots(wh)),
        Route("/claims/{rest:path}", claim),
        Route("/documents/{rest:path}", document),
        Route("/serve.css", css),
    ]
    app = Starlette(routes=routes, exception_handlers={404: not_found})
    app.add_middleware(SecurityHeaders)
    return app
