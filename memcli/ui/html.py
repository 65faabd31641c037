"""Small helpers that write the pages' HTML: escaping, links, tables, the page shell.

Every value that comes from the store goes through `esc` (or `url`, which quotes it), so
a stored message can never become markup on the page.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from urllib.parse import quote, urlencode

from memcli.models import parse_node_id

NAV = (
    ("search", "/search", "Search"),
    ("timeline", "/timeline", "Timeline"),
    ("entities", "/entities", "Entities"),
    ("runs", "/runs", "Consolidation"),
    ("overview", "/", "Overview"),
)


def esc(value: object) -> str:
    """Text (or any value's str) safe inside an element or a quoted attribute."""
    return escape("" if value is None else str(value), quote=True)


def url(path: str, **params: object) -> str:
    """`path` with the given query parameters (None ones left out), escaped for an
    attribute."""
    given = {k: v for k, v in params.items() if v is not None and v != ""}
    return esc(f"{path}?{urlencode(given)}" if given else path)


def node_href(node_id: str) -> str:
    """The address of a node's page."""
    return f"/node/{quote(node_id)}"


def node_link(node_id: str, text: str | None = None) -> str:
    """A link to a node's page, coloured by its kind."""
    parsed = parse_node_id(node_id)
    kind = parsed[0] if parsed else "node"
    label = esc(text if text is not None else node_id)
    return f'<a class="nid k-{kind}" href="{esc(node_href(node_id))}">{label}</a>'


def day(timestamp: str | None) -> str:
    """The date and time part of an ISO timestamp, shortened for a table cell."""
    if not timestamp:
        return ""
    return timestamp[:16].replace("T", " ")


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """A table whose cells are already HTML (escape values before passing them)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    klass = f' class="{esc(cls)}"' if cls else ""
    return f"<table{klass}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def pager(path: str, offset: int, limit: int, total: int, **params: object) -> str:
    """Previous/next links for a paged list, and where the page is in it."""
    links = []
    if offset > 0:
        links.append(f'<a href="{url(path, offset=max(offset - limit, 0), **params)}">← newer</a>')
    shown = f"{offset + 1}–{min(offset + limit, total)} of {total}" if total else "none"
    links.append(f"<span>{shown}</span>")
    if offset + limit < total:
        after = url(path, offset=offset + limit, **params)
        links.append(f'<a rel="next" href="{after}">more →</a>')
    return f'<nav class="pager">{" ".join(links)}</nav>'


def shell(title: str, body: str, active: str, *, query: str = "", space: str = "") -> str:
    """A whole page: head, the navigation with a search box, and `body`."""
    nav = "".join(
        f'<a href="{href}"{" class=on" if key == active else ""}>{label}</a>'
        for key, href, label in NAV
    )
    where = f'<span class="space">space {esc(space)}</span>' if space else ""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · memcli</title>"
        '<link rel=stylesheet href="/static/ui.css"><script src="/static/ui.js" defer></script>'
        '</head><body><header><a class=brand href="/">memcli</a>'
        f"<nav>{nav}</nav>"
        '<form class=quick action="/search" method=get role=search>'
        f'<input name=q type=search placeholder="Search the memory (/)" value="{esc(query)}"'
        ' aria-label="search" accesskey="s"></form>'
        f"{where}</header><main>{body}</main></body></html>"
    )


def message(title: str, text: str, fix: str | None = None) -> str:
    """The body of an error or notice page."""
    extra = f'<p class="fix">{esc(fix)}</p>' if fix else ""
    return f"<h1>{esc(title)}</h1><p>{esc(text)}</p>{extra}"
