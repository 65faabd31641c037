"""Who may read the page: the person who started `memcli ui`, from this machine.

Any local process, and any web page open in the user's browser, can reach a port on
127.0.0.1. So every request must (in this order):

1. name the loopback address in its Host header (127.0.0.1, localhost or [::1] with the
   server's port), else 421: a foreign Host is how DNS rebinding lends another site's
   name to this port;
2. be a GET or HEAD, else 405: the page only reads;
3. come with no Origin, or this server's own, else 403;
4. carry the token printed at start, as `?token=`, as `Authorization: Bearer TOKEN`, or
   as the cookie a browser's first visit set (HttpOnly, SameSite=Strict, so no other
   site's page can send it), else 401.

A browser's visit with `?token=` (a top-level navigation: `Sec-Fetch-Mode: navigate`) is
redirected to the same address without it, setting the cookie, so the token does not stay
in the address bar or the history. Any other request with a valid token is answered at
once, so curl and wget work with the printed address and no cookie jar. The redirect names
this server's own origin in full: a path such as `//other.host/` stays a path here. Every
answer carries headers that keep the page out of frames and its content from being sniffed
or leaked through Referer. Plain ASGI: no framework needed for this.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
READ_METHODS = ("GET", "HEAD")
# No inline script or style: only the package's own files, so injected markup cannot run.
CSP = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


def cookie_name(port: int) -> str:
    """The cookie of the server on `port` (cookies ignore ports: two servers need two)."""
    return f"memcli_ui_{port}"


class Guard:
    """ASGI middleware enforcing the rules above in front of `app`."""

    def __init__(self, app: ASGIApp, token: str, port: int) -> None:
        self.app = app
        self.token = token.encode()
        self.port = port
        self.hosts = {f"{name}:{port}".encode() for name in LOOPBACK_NAMES}
        self.origins = {f"http://{name}:{port}".encode() for name in LOOPBACK_NAMES}
        self.cookie = cookie_name(port)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers", ())}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _plain(send, *refusal)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if "token" not in query:
            await self.app(scope, receive, _secured(send))
        elif headers.get(b"sec-fetch-mode") == b"navigate":  # a browser: token out of sight
            rest = urlencode({k: v for k, v in query.items() if k != "token"})
            path = scope.get("raw_path") or quote(scope["path"]).encode()
            # In full, with the Host checked above: `//other.host/` must stay a path here.
            where = f"http://{headers[b'host'].decode('latin-1')}{path.decode('latin-1')}"
            await self._first_visit(send, where + (f"?{rest}" if rest else ""))
        else:  # curl, wget, a script: the answer now, and the cookie for an old browser
            await self.app(scope, receive, _secured(send, self._cookie_header()))

    def _refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> tuple[int, str] | None:
        """(status, reason) when the request must be refused, else None."""
        if headers.get(b"host", b"").lower() not in self.hosts:
            return 421, "this page answers only at its loopback address (127.0.0.1)"
        if scope["method"] not in READ_METHODS:
            return 405, "this page only reads: GET and HEAD"
        origin = headers.get(b"origin")
        if origin is not None and origin.lower() not in self.origins:
            return 403, "requests from other sites are refused"
        if not self._has_token(scope, headers):
            return 401, (
                "this page needs the address `memcli ui` printed when it started "
                "(http://127.0.0.1:PORT/?token=...), or its token as `Authorization: Bearer`"
            )
        return None

    def _has_token(self, scope: Scope, headers: dict[bytes, bytes]) -> bool:
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if "token" in query:
            return hmac.compare_digest(query["token"].encode(), self.token)
        scheme, _, bearer = headers.get(b"authorization", b"").partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(bearer.strip(), self.token):
            return True
        for part in headers.get(b"cookie", b"").split(b";"):
            name, _, value = part.strip().partition(b"=")
            if name == self.cookie.encode() and hmac.compare_digest(value, self.token):
                return True
        return False

    def _cookie_header(self) -> tuple[bytes, bytes]:
        cookie = f"{self.cookie}={self.token.decode()}; HttpOnly; SameSite=Strict; Path=/"
        return b"set-cookie", cookie.encode()

    async def _first_visit(self, send: Send, where: str) -> None:
        headers = [(b"location", where.encode("latin-1")), self._cookie_header()]
        await send(
            {"type": "http.response.start", "status": 303, "headers": headers + SECURITY_HEADERS}
        )
        await send({"type": "http.response.body", "body": b""})


def _secured(send: Send, *extra: tuple[bytes, bytes]) -> Send:
    """`send` with the security headers (and any `extra` ones) added to the response."""

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            added = [*message.get("headers", []), *SECURITY_HEADERS, *extra]
            message = {**message, "headers": added}
        await send(message)

    return wrapped


async def _plain(send: Send, status: int, reason: str) -> None:
    """A short plain-text refusal."""
    body = f"memcli ui: {reason}\n".encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        *SECURITY_HEADERS,
    ]
    if status == 405:
        headers.append((b"allow", b"GET, HEAD"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
