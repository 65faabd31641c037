"""The ASGI app of `memcli ui`: routes to the pages, the package's static files, errors
as pages, all behind the guard (memcli.ui.guard).

One Memory, opened read-only and kept warm, serves every request, one at a time (a
Memory serves one thread at a time; the pages are quick).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from importlib import resources
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from memcli.errors import MemcliError, NotFound, UsageError
from memcli.ui import pages_browse, pages_search
from memcli.ui.guard import Guard
from memcli.ui.html import message, shell

if TYPE_CHECKING:
    from memcli.memory import Memory

STATIC = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}
Render = Callable[["Memory", Request], tuple[str, str, str]]  # -> (title, body, active)


def _offset(request: Request) -> int:
    text = request.query_params.get("offset", "0")
    if not text.isdigit():
        raise UsageError(f"offset must be a whole number, got {text!r}")
    return int(text)


def _search(mem: Memory, r: Request) -> tuple[str, str, str]:
    q = r.query_params.get("q", "")
    body = pages_search.search(mem, q, r.query_params.get("strategy"), r.query_params.get("k"))
    return (q or "Search"), body, "search"


def _overview(mem: Memory, r: Request) -> tuple[str, str, str]:
    return "Overview", pages_search.overview(mem), "overview"


def _runs(mem: Memory, r: Request) -> tuple[str, str, str]:
    return "Consolidation", pages_search.runs(mem, _offset(r)), "runs"


def _timeline(mem: Memory, r: Request) -> tuple[str, str, str]:
    return "Timeline", pages_browse.timeline(mem, _offset(r)), "timeline"


def _session(mem: Memory, r: Request) -> tuple[str, str, str]:
    name = r.query_params.get("name", "")
    return f"Session {name}", pages_browse.session(mem, name), "timeline"


def _node(mem: Memory, r: Request) -> tuple[str, str, str]:
    node_id = r.path_params["node_id"]
    return node_id, pages_browse.node(mem, node_id), ""


def _entities(mem: Memory, r: Request) -> tuple[str, str, str]:
    body = pages_browse.listing(mem, "entity", r.query_params.get("grep"), _offset(r))
    return "Entities", body, "entities"


def _entity(mem: Memory, r: Request) -> tuple[str, str, str]:
    from memcli.ui.pages_entity import entity

    name = r.path_params["name"]
    return name, entity(mem, name), "entities"


def _list(mem: Memory, r: Request) -> tuple[str, str, str]:
    kind = r.query_params.get("kind") or None
    body = pages_browse.listing(mem, kind, r.query_params.get("grep"), _offset(r))
    return "Memories", body, "entities" if kind == "entity" else ""


PAGES: dict[str, Render] = {
    "/": _overview,
    "/search": _search,
    "/timeline": _timeline,
    "/session": _session,
    "/node/{node_id}": _node,
    "/entities": _entities,
    "/entity/{name}": _entity,
    "/list": _list,
    "/runs": _runs,
}


def _status(exc: MemcliError) -> int:
    if isinstance(exc, NotFound):
        return 404
    return 400 if isinstance(exc, UsageError) or exc.exit_code in (2, 3, 4) else 500


def build_app(mem: Memory, token: str, port: int) -> Guard:
    """The page over `mem` (open it read-only), answering only requests that carry
    `token` and name 127.0.0.1:`port` (memcli.ui.guard)."""
    lock = threading.Lock()

    def page(render: Render) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            query = request.query_params.get("q", "")
            try:
                with lock:
                    title, body, active = render(mem, request)
                status = 200
            except MemcliError as exc:
                title, active, status = "Not shown", "", _status(exc)
                body = message(title, exc.message, exc.fix)
            html = shell(title, body, active, query=query, space=mem.space)
            return HTMLResponse(html, status_code=status)

        return endpoint

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("not found", status_code=404, media_type="text/plain")
        data = resources.files("memcli.ui").joinpath("static").joinpath(name).read_bytes()
        return Response(data, media_type=STATIC[name])

    routes = [Route(path, page(render), methods=["GET", "HEAD"]) for path, render in PAGES.items()]
    routes.append(Route("/static/{name}", static, methods=["GET", "HEAD"]))
    routes.append(Route("/favicon.ico", lambda r: Response(status_code=204), methods=["GET"]))
    return Guard(Starlette(routes=routes), token, port)
