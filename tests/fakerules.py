"""What the fake model server does that real servers differ in: which response formats it
refuses, a context window it enforces, replies cut at max_tokens, and its token count."""

from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """The fake's token count: words and punctuation marks."""
    return len(_TOKEN.findall(text))


def prompt_tokens(body: dict[str, Any]) -> int:
    """The fake's token count of a chat request's messages."""
    return sum(count_tokens(str(m.get("content") or "")) for m in body.get("messages") or [])


def refused_format(accepts: str, response_format: Any) -> tuple[int, str] | None:
    """The status and message a server that accepts only `accepts` gives this format."""
    if not isinstance(response_format, dict):
        return None
    kind = response_format.get("type")
    if kind == "json_schema" and accepts in ("json_object+schema", "json_object", "prompt"):
        status = 500 if accepts == "json_object+schema" else 400
        return (
            status,
            f"response_format.type: input should be 'text' or 'json_object', got {kind!r}",
        )
    if "schema" in response_format and accepts in ("json_object", "prompt"):
        return 400, "response_format: extra field 'schema' not permitted"
    if accepts == "prompt":
        return 400, "response_format is not supported"
    return None


def too_long(window: int, body: dict[str, Any], shorten: bool) -> tuple[int, Any] | None:
    prompt = prompt_tokens(body)
    wanted = int(body.get("max_tokens") or 0)
    if prompt + wanted <= window or (shorten and prompt < window):
        return None
    text = (
        f"This model's maximum context length is {window} tokens. However, you requested "
        f"{prompt + wanted} tokens ({prompt} in the messages, {wanted} in the completion). "
        "Please reduce the length of the messages or completion."
    )
    return 400, {
        "error": {
            "message": text,
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }


def capped(text: str, limit: Any) -> tuple[str, bool]:
    """The reply cut after `limit` tokens (as a model stopped by max_tokens), and whether."""
    if not isinstance(limit, int) or limit <= 0 or count_tokens(text) <= limit:
        return text, False
    ends = [m.end() for m in _TOKEN.finditer(text)]
    return text[: ends[limit - 1]], True
