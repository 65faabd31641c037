"""The forms a JSON schema can be sent in, and what a provider remembers about which one works.

Servers differ in what they accept. OpenAI, vLLM, llama.cpp's own server and LM Studio take
`response_format: {"type": "json_schema", ...}`; llama-cpp-python's server takes only
`{"type": "json_object", "schema": ...}` (and answers json_schema with a 500); some take
only `{"type": "json_object"}`; some take no response_format at all. The forms are tried in
that order and the first one accepted is kept for the rest of the process. The forms that
constrain decoding to the schema (the first two) send it once, natively; the others carry it
in a system message, so the model at least reads it.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

#: Most exact first. `constrained`: the server is told the schema itself.
FORMS: tuple[str, ...] = ("json_schema", "json_object+schema", "json_object", "prompt")
CONSTRAINED = frozenset({"json_schema", "json_object+schema"})

# A refusal that names the response format (or Ollama's `format`) in its message.
_NAMES_FORMAT = re.compile(r"response_format|json_schema|\bschema\b|\bformat\b", re.IGNORECASE)


def rejects_format(status: int, message: str) -> bool:
    """Whether an HTTP error answer refuses the response format rather than the request.

    FastAPI servers answer an unknown format with 422, llama-cpp-python with 500."""
    return status in (400, 422, 500) and bool(_NAMES_FORMAT.search(message))


def schema_name(schema: dict[str, Any]) -> str:
    """The schema's name as OpenAI allows it: letters, digits, _ and -, up to 64."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title") or "reply"))[:64]


def with_guide(messages: list[dict[str, str]], schema: dict[str, Any]) -> list[dict[str, str]]:
    """The messages with the schema written into the (first) system message."""
    # It also satisfies OpenAI's rule that the messages mention JSON in json_object mode.
    guide = "Reply with one JSON object that fits this JSON schema:\n" + json.dumps(schema)
    if messages and messages[0].get("role") == "system":
        # Many chat templates accept a single system message, and only first.
        first = {**messages[0], "content": f"{messages[0]['content']}\n\n{guide}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": guide}, *messages]


class FormatChoice:
    """Which form this server accepts: the first of `forms` not refused yet (thread-safe)."""

    def __init__(self, forms: tuple[str, ...] = FORMS) -> None:
        self._forms = list(forms)
        self._lock = threading.Lock()

    @property
    def current(self) -> str:
        """The form to send now."""
        return self._forms[0]

    @property
    def constrained(self) -> bool:
        """True while the server is told the schema itself."""
        return self.current in CONSTRAINED

    def refused(self, form: str) -> bool:
        """Drop a refused form; False when no form is left to try."""
        with self._lock:
            if form in self._forms and len(self._forms) > 1:
                self._forms.remove(form)
            return self._forms[0] != form
