"""One retry policy for every model provider (tenacity), and the translation of failures into
memcli errors.

Provider code runs a single attempt inside `Retries.run`. An attempt either returns, or fails
with a network error from httpx (the ollama client lets those through too), a `BadStatus` for an
HTTP error answer, or a `BadReply` for a 200 whose body cannot be read. Transient failures are
retried with backoff; whatever is left becomes a `ProviderUnreachable` naming the server and a fix.
"""

from __future__ import annotations

import email.utils
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TypeVar

import httpx
import tenacity

from memcli.errors import ProviderUnreachable
from memcli.text import hide_userinfo

T = TypeVar("T")

_ERRNO_PREFIX = re.compile(r"^\[Errno -?\d+\]\s*")

# Making a connection is quick or hopeless: a server that refuses it, or a host that does not
# answer, gets one more try after a short pause, while `timeout` (how long a reply may take)
# and the backoff stay for servers that were reached.
CONNECT_TIMEOUT_S = 2.0
CONNECT_ATTEMPTS = 2
CONNECT_RETRY_WAIT_S = 0.25


def timeouts(read: float) -> httpx.Timeout:
    """httpx timeouts: `read` for the reply, a short one for making the connection."""
    return httpx.Timeout(read, connect=min(read, CONNECT_TIMEOUT_S))


class BadStatus(Exception):
    """The server answered with an HTTP error status (raised inside an attempt)."""

    def __init__(self, status: int, message: str, retry_after: float | None = None) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message
        self.retry_after = retry_after


class BadReply(Exception):
    """The server answered 200 with a body that is not the reply it should be."""

    NOT_JSON = "the body is not JSON"
    WRONG_SHAPE = "the body is not the expected JSON reply"


@dataclass(frozen=True)
class Failure:
    """One failed attempt, reduced to what error messages need (no client objects kept)."""

    kind: str  # connect | transport | timeout | http | reply | request
    reason: str
    status: int | None = None
    retry_after: float | None = None

    @property
    def retryable(self) -> bool:
        """True when the same request may well succeed if sent again."""
        if self.kind == "http":
            return self.status is not None and (self.status == 429 or self.status >= 500)
        return self.kind in ("connect", "transport", "timeout", "reply")


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter; `sleep` and `rand` are injectable so tests stay fast."""

    base: float = 0.5
    cap: float = 8.0
    max_wait: float = 60.0  # ceiling on a server's Retry-After, so a CLI never hangs for hours
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    rand: Callable[[], float] = field(default=random.random, compare=False)

    def delay(self, retry_number: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retry_number` (1-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_wait)
        ceiling = min(self.cap, self.base * 2 ** (retry_number - 1))
        # Half fixed, half random: clients that failed together do not retry in lockstep,
        # yet every wait still grows with the attempt number.
        return ceiling / 2 + self.rand() * ceiling / 2


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max((when - datetime.now(timezone.utc)).total_seconds(), 0.0)


@dataclass(frozen=True)
class Endpoint:
    """Which server is being called, and what to tell the user when it fails."""

    name: str  # how messages refer to it: "Ollama", "the OpenAI-compatible server"
    url: str
    timeout: float
    unreachable_fix: str
    auth_fix: str
    not_found_fix: str
    server_error_fix: str = "check the server's log; it may be out of memory or still loading"
    timeout_fix: str = (
        "raise llm.timeout / embedding.timeout (a first call may wait for the model to load)"
    )
    bad_url_fix: str = "set llm.url / embedding.url to a full http:// or https:// address"
    bad_reply_fix: str = (
        "check that llm.url / embedding.url points at a server of the configured provider"
    )

    def _fix(self, failure: Failure) -> str:
        if failure.kind == "timeout":
            return self.timeout_fix
        if failure.kind == "request":
            return self.bad_url_fix
        if failure.kind == "reply":
            return self.bad_reply_fix
        if failure.kind != "http":
            return self.unreachable_fix
        if failure.status in (401, 403):
            return self.auth_fix
        if failure.status == 404:
            return self.not_found_fix
        if failure.status == 429:
            return (
                "the server is rate-limiting; wait, lower llm.concurrency or raise llm.max_retries"
            )
        if failure.status is not None and failure.status >= 500:
            return self.server_error_fix
        return "check the model name and settings in the config against what the server accepts"

    def error(self, failure: Failure, attempts: int) -> ProviderUnreachable:
        """The memcli error for a failure that will not be retried any more."""
        url = hide_userinfo(self.url)
        if failure.kind in ("connect", "transport", "timeout", "request"):
            message = f"cannot reach {self.name} at {url}: {failure.reason}"
        elif failure.kind == "reply":
            message = f"{self.name} at {url} sent an unreadable reply: {failure.reason}"
        else:
            message = f"{self.name} at {url} answered HTTP {failure.status}: {failure.reason}"
        if attempts > 1:
            message += f" (after {attempts} attempts)"
        return ProviderUnreachable(message, fix=self._fix(failure))


def _unwrapped(exc: BaseException) -> BaseException:
    # The ollama client replaces httpx.ConnectError by a bare ConnectionError with a generic
    # text; the original, with the real reason, is still attached as its context.
    if not isinstance(exc, httpx.HTTPError) and isinstance(exc.__context__, httpx.HTTPError):
        return exc.__context__
    return exc


def _network_reason(exc: BaseException) -> str:
    exc = _unwrapped(exc)
    text = _ERRNO_PREFIX.sub("", str(exc)).strip().rstrip(".") or type(exc).__name__
    return text[:1].lower() + text[1:]


def describe(exc: BaseException, timeout: float) -> Failure:
    """Reduce an attempt's exception to a Failure."""
    if isinstance(exc, BadStatus):
        return Failure("http", exc.message or "(no message)", exc.status, exc.retry_after)
    if isinstance(exc, BadReply):
        return Failure("reply", str(exc))
    if isinstance(_unwrapped(exc), httpx.ConnectTimeout):
        return Failure("connect", f"no connection within {min(timeout, CONNECT_TIMEOUT_S):g} s")
    if isinstance(_unwrapped(exc), httpx.ConnectError):
        return Failure("connect", _network_reason(exc))
    if isinstance(exc, httpx.TimeoutException):
        return Failure("timeout", f"no answer within {timeout:g} s")
    if isinstance(exc, (httpx.NetworkError, httpx.RemoteProtocolError, ConnectionError)):
        return Failure("transport", _network_reason(exc))
    # Unsupported scheme, malformed URL, too many redirects: sending again will not help.
    return Failure("request", _network_reason(exc))


_CAUGHT = (BadStatus, BadReply, httpx.HTTPError, httpx.InvalidURL, ConnectionError)


class _Failed(Exception):
    """An attempt's exception reduced to a Failure (the client exception is dropped: its
    request object carries the headers, API key included)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.reason)
        self.failure = failure


def _failure(state: tenacity.RetryCallState) -> Failure | None:
    failed = state.outcome.exception() if state.outcome else None
    return failed.failure if isinstance(failed, _Failed) else None


def _retry_wait(backoff: Backoff) -> Callable[[tenacity.RetryCallState], float]:
    def wait(state: tenacity.RetryCallState) -> float:
        failure = _failure(state)
        if failure is not None and failure.kind == "connect":
            return CONNECT_RETRY_WAIT_S
        retry_after = failure.retry_after if failure is not None else None
        return backoff.delay(state.attempt_number, retry_after)

    return wait


def _stop(max_retries: int) -> Callable[[tenacity.RetryCallState], bool]:
    def stop(state: tenacity.RetryCallState) -> bool:
        failure = _failure(state)
        if failure is not None and failure.kind == "connect":
            return state.attempt_number >= min(CONNECT_ATTEMPTS, max_retries + 1)
        return state.attempt_number >= max_retries + 1

    return stop


@dataclass(frozen=True)
class Retries:
    """How one server is called: which it is, and how often and how patiently to retry."""

    endpoint: Endpoint
    max_retries: int
    backoff: Backoff = field(default_factory=Backoff)

    def run(self, attempt: Callable[[], T]) -> T:
        """Run `attempt`, retrying transient failures; ProviderUnreachable when out of luck."""

        def once() -> T:
            try:
                return attempt()
            except _CAUGHT as exc:
                raise _Failed(describe(exc, self.endpoint.timeout)) from None

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(
                lambda exc: isinstance(exc, _Failed) and exc.failure.retryable
            ),
            stop=_stop(self.max_retries),
            wait=_retry_wait(self.backoff),
            sleep=self.backoff.sleep,
            reraise=True,
        )
        try:
            return retrying(once)
        except _Failed as failed:
            failure = failed.failure
        raise self.endpoint.error(failure, retrying.statistics["attempt_number"])


def checked_vectors(vectors: list[Any], texts: int) -> list[Any]:
    """The vectors of an embedding reply; BadReply when their number or lengths are off."""
    if len(vectors) != texts:
        raise BadReply(f"{len(vectors)} embeddings for {texts} texts")
    if len({len(v) for v in vectors}) > 1:
        raise BadReply("embeddings of different lengths in one reply")
    return vectors
