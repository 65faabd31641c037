"""Chat models for the fake server's `responder`, answering by the JSON schema they are asked for.

memcli sends every structured request with the schema of the reply it wants: Ollama's `format`,
OpenAI's `response_format` (json_schema, json_object with a schema, or the schema in a
system message).
The schema's top-level properties say which task is asked (`TASKS`). The values the prompt
was rendered with are read back by matching the request against the template of that task's
prompt file, so rewording or reordering a prompt changes nothing here; data blocks come back
without their <memory_data> fences. Only a renamed placeholder or a changed line format
(`[ep12] (date) Speaker: text`) needs a change in this file.

Two scripted models use it:
- `consolidation_reply`: a valid reply to every memcli prompt (one fact per new turn, one
  concept per fact, one reflection per batch, links labelled semantic);
- `ScriptedLLM`: consolidation replies about a few topics, with switches that make it
  misbehave the way real models do.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from typing import Any

#: top-level properties of a reply schema -> the task, named like its file in prompts/
TASKS = {
    frozenset({"boundaries"}): "boundaries",
    frozenset({"summary", "keywords"}): "summarize",
    frozenset({"links"}): "relate",
    frozenset({"facts", "entities", "triplets"}): "extract",
    frozenset({"reflections"}): "reflect",
    frozenset({"judgements"}): "supersede",
    frozenset({"answer", "citations"}): "answer",
    frozenset({"key_facts", "correct"}): "judge",
}

_PLACEHOLDER = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")
_FENCE_OPEN, _FENCE_CLOSE = "<memory_data>\n", "\n</memory_data>"
_ID = re.compile(r"\[((?:ep|sg|fa|rf)\d+)\]")
_TURN = re.compile(r"^\[(ep\d+)\] \(([^)]*)\) (\w+): (.*?)(?:  \{dates: (.*)\})?$", re.M)
_NUMBERED = re.compile(r"^(\d+)\. \[ep\d+\] \([^)]*\) \w+: (.*)$", re.M)
_WORDS = re.compile(r"[a-z]{5,}")


@dataclass(frozen=True)
class Request:
    """A chat request as the scripted models see it."""

    task: str | None  # None: no schema, or one no memcli prompt uses
    values: dict[str, str]  # the prompt's placeholder values, data blocks unfenced
    retry: bool  # a re-ask: the conversation already holds a reply of the model


def schema_of(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a chat request asks its reply to fit, or None."""
    if isinstance(body.get("format"), dict):  # Ollama
        return body["format"]
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":  # OpenAI-compatible, native
        return response_format["json_schema"]["schema"]
    if isinstance(response_format.get("schema"), dict):  # llama-cpp-python's json_object
        return response_format["schema"]
    # json_object alone, or no response_format: the schema travels in a system message.
    if response_format.get("type") in ("json_object", None):
        for message in body.get("messages") or []:
            if message.get("role") == "system":
                found = _first_schema(str(message.get("content") or ""))
                if found is not None:
                    return found
    return None


def _first_schema(text: str) -> dict[str, Any] | None:
    decoder = json.JSONDecoder()
    for start in (m.start() for m in re.finditer(r"\{", text)):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict) and "properties" in value:
            return value
    return None


def task_of(body: dict[str, Any]) -> str | None:
    """The memcli task a request asks for, told by its reply schema."""
    schema = schema_of(body)
    if schema is None:
        return None
    return TASKS.get(frozenset(schema.get("properties") or {}))


@functools.cache
def _template(task: str) -> re.Pattern[str]:
    """prompts/<task>.md as a pattern: each placeholder captures its rendered value."""
    text = resources.files("memcli.prompts").joinpath(f"{task}.md").read_text(encoding="utf-8")
    parts, seen, end = [], set(), 0
    for match in _PLACEHOLDER.finditer(text):
        name = match.group(1)
        parts.append(re.escape(text[end : match.start()]))
        parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>.*?)")
        seen.add(name)
        end = match.end()
    parts.append(re.escape(text[end:]))
    return re.compile("".join(parts), re.DOTALL)


def _unfenced(value: str) -> str:
    if value.startswith(_FENCE_OPEN) and value.endswith(_FENCE_CLOSE):
        return value[len(_FENCE_OPEN) : -len(_FENCE_CLOSE)]
    return value


def read(body: dict[str, Any]) -> Request:
    """Task, placeholder values and re-ask flag of a chat request."""
    messages = body.get("messages") or []
    task = task_of(body)
    prompt = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
    values: dict[str, str] = {}
    if task is not None:
        match = _template(task).fullmatch(prompt)
        if match is None:
            raise AssertionError(f"the {task} request does not fit prompts/{task}.md")
        values = {name: _unfenced(value) for name, value in match.groupdict().items()}
    retry = any(m.get("role") == "assistant" for m in messages)
    return Request(task, values, retry)


def ids(text: str) -> list[str]:
    """The bracketed node ids ([ep12], [sg3], [fa7], [rf2]) in `text`, in order."""
    return _ID.findall(text)


def lines_with_ids(text: str) -> list[tuple[str, str]]:
    """(id, rest of the line) for every line that holds a bracketed id."""
    out = []
    for line in text.splitlines():
        match = _ID.search(line)
        if match:
            out.append((match.group(1), line[match.end() :].strip()))
    return out


# -- a valid reply to every prompt --------------------------------------------------------------


def _summary(values: dict[str, str]) -> dict[str, Any]:
    words = _WORDS.findall(" ".join(t for _, t in lines_with_ids(values["turns"])).lower())[:3]
    summary = "The speakers talk about " + (", ".join(words) or "their week") + "."
    return {"summary": summary, "keywords": words}


def _facts(values: dict[str, str]) -> dict[str, Any]:
    facts = []
    for node_id, line in lines_with_ids(values["turns"]):
        words = _WORDS.findall(line.lower())
        label = words[-1] if words else "chat"
        # A restatement, not a copy: memcli drops facts that repeat a turn word for word.
        picked = [w for w in re.findall(r"[a-z]+", line.lower()) if len(w) > 3][-3:]
        said = " and ".join(reversed(picked)) or "something"
        fact = {
            "text": f"Someone ({node_id}) mentioned {said}",
            "belief": 0.9,
            "sources": [node_id],
        }
        facts.append({**fact, "concepts": [label], "date": None})
    return {"facts": facts}


def _reflections(values: dict[str, str]) -> dict[str, Any]:
    cited = ids(values["new_facts"])
    if not cited:
        return {"reflections": []}
    # Grounded in the facts it cites: memcli drops a reflection most of whose words they lack.
    lines = dict(lines_with_ids(values["new_facts"]))
    said = " ".join(lines.get(i, "") for i in cited[:2]).lower()
    about = " and ".join(dict.fromkeys(_WORDS.findall(said))) or "them"
    return {"reflections": [{"text": f"Someone kept coming back to {about}", "belief": 0.7,
                             "facts": cited[:2]}]}  # fmt: skip


def _links(values: dict[str, str]) -> dict[str, Any]:
    shown = ids(values["candidates"])
    return {"links": [{"id": i, "label": "semantic", "confidence": 0.9} for i in shown]}


def _entities(values: dict[str, str]) -> dict[str, Any]:
    """Each speaker described by their turns; one triplet per turn to its last long word."""
    entities: dict[str, dict[str, Any]] = {}
    triplets = []
    for ep, _, speaker, text, _ in _TURN.findall(values["turns"]):
        note = entities.setdefault(
            speaker, {"name": speaker, "type": "person", "description": "", "turns": []}
        )
        note["turns"].append(ep)
        note["description"] = f"{speaker} said: {text[:60]}"
        words = _WORDS.findall(text.lower())
        if words:
            triplets.append({"subject": speaker, "predicate": "talked about",
                             "object": words[-1], "turns": [ep], "date": None})  # fmt: skip
    return {"entities": list(entities.values()), "triplets": triplets}


_SHOWN_FACT = re.compile(r"^(?:- )?\[(fa\d+)\] \(([^)]*)\) (.*)$", re.M)


def _supersede(values: dict[str, str]) -> dict[str, Any]:
    """An earlier fact is updated by a new one that says the same thing about the same
    subject but for its last word (its value): "Ana lives in Lyon" updates "Ana lives in
    Porto"."""
    judgements = []
    for case in values["cases"].split("### New fact")[1:]:
        shown = _SHOWN_FACT.findall(case)
        if not shown:
            continue
        new, _, text = shown[0]
        head, _, value = text.rstrip(".").rpartition(" ")
        for old, _, old_text in shown[1:]:
            old_head, _, old_value = old_text.rstrip(".").rpartition(" ")
            if head and old_head == head and old_value != value:
                judgements.append({"new": new, "old": old, "relation": "updates"})
    return {"judgements": judgements}


_NOT_SAID = {"answer": "The memory does not say.", "citations": []}
_WRONG = {"key_facts": [{"fact": "the answer", "present": False}], "correct": False}
_VALID = {
    "boundaries": lambda values: {"boundaries": []},
    "summarize": _summary,
    "relate": _links,
    "extract": lambda values: {**_facts(values), **_entities(values)},
    "reflect": _reflections,
    "supersede": _supersede,
    "answer": lambda values: _NOT_SAID,
    "judge": lambda values: _WRONG,
}


def consolidation_reply(body: dict[str, Any]) -> str:
    """A valid reply to whichever memcli task `body` asks for ("{}" for anything else)."""
    request = read(body)
    build = _VALID.get(request.task or "")
    return json.dumps(build(request.values)) if build else "{}"


# -- a topic-aware consolidation model with switches -------------------------------------------

TOPICS = ("woodturning", "allotment", "marathon", "canoe")


_SCRIPTED = ("boundaries", "summarize", "relate", "extract", "reflect", "supersede")


class ScriptedLLM:
    """Callable responder for the consolidation tasks. It answers deterministically from what
    the prompt shows, so reruns send identical requests. Switches make it misbehave: fenced
    JSON with trailing commas, a schema violation on the first try, replies that never
    validate, and ids that were never in the prompt."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.reasks: Counter[str] = Counter()
        self.invent_ids = True  # add ids that the prompt never showed
        self.fenced = False  # wrap replies in prose and ```json fences, with trailing commas
        self.bad_first: set[str] = set()  # tasks whose first reply misses required fields
        self.always_bad: set[str] = set()  # tasks whose replies never validate
        self.topics = TOPICS  # the words that make a turn worth a fact

    def __call__(self, body: dict[str, Any]) -> str:
        request = read(body)
        task = request.task
        if task not in _SCRIPTED:
            raise AssertionError(f"ScriptedLLM plays consolidation only, not {task!r}")
        self.calls[task] += 1
        if request.retry:
            self.reasks[task] += 1
        if task in self.always_bad or (task in self.bad_first and not request.retry):
            return json.dumps({"unexpected": True})
        reply = getattr(self, task)(request.values)
        if self.fenced:
            text = json.dumps(reply, indent=1).replace("\n}", ",\n}")
            return f"Sure! Here is the JSON you asked for:\n```json\n{text}\n```\nHope it helps."
        return json.dumps(reply)

    def boundaries(self, values: dict[str, str]) -> dict[str, Any]:
        numbered = _NUMBERED.findall(values["turns"])
        starts = [int(n) for n, text in numbered if text.startswith("By the way")]
        return {"boundaries": [*starts, *([999] if self.invent_ids else [])]}

    def summarize(self, values: dict[str, str]) -> dict[str, Any]:
        turns = _TURN.findall(values["turns"])
        text = " ".join(t[3] for t in turns)
        words = [t for t in self.topics if t in text.lower()]
        about = ", ".join(words or _WORDS.findall(text.lower())[:3]) or "their week"
        return {"summary": f"{turns[0][2]} and others talk about {about}.", "keywords": words}

    def relate(self, values: dict[str, str]) -> dict[str, Any]:
        links = [
            {"id": sid, "label": "semantic", "confidence": 0.9 if i == 0 else 0.3}
            for i, sid in enumerate(ids(values["candidates"]))
        ]
        if self.invent_ids:
            links.append({"id": "sg999", "label": "support", "confidence": 1.0})
        return {"links": links}

    def extract(self, values: dict[str, str]) -> dict[str, Any]:
        return {**self.facts(values), **self.entities(values)}

    def facts(self, values: dict[str, str]) -> dict[str, Any]:
        facts: list[dict[str, Any]] = []
        for n, (ep, _, speaker, text, dates) in enumerate(_TURN.findall(values["turns"])):
            topic = next((t for t in self.topics if t in text.lower()), None)
            if topic is None:
                continue
            # Alternate plural and singular labels: the store must keep one concept.
            label = f"{topic}_plans" if n % 2 else f"{topic}_plan"
            date = re.search(r"= (\d{4}-\d{2}-\d{2})", dates or "")
            facts.append(
                {
                    "text": f"In {ep}, {speaker} talked about {topic}",
                    "belief": 0.9,
                    "sources": [ep, *(["ep99999"] if self.invent_ids else [])],
                    "concepts": [label],
                    "date": date.group(1) if date else None,
                }
            )
        if self.invent_ids:
            facts.insert(0, {"text": "An invented claim.", "belief": 1.0, "sources": ["ep424242"]})
        return {"facts": facts}

    def entities(self, values: dict[str, str]) -> dict[str, Any]:
        reply = _entities(values)
        if self.invent_ids:
            reply["triplets"].append(
                {"subject": "Ana", "predicate": "owns", "object": "Kiln", "turns": ["ep424242"]}
            )
        return reply

    def supersede(self, values: dict[str, str]) -> dict[str, Any]:
        return _supersede(values)

    def reflect(self, values: dict[str, str]) -> dict[str, Any]:
        shown = ids(values["new_facts"])
        if len(shown) < 2:
            return {"reflections": []}
        cited = shown[:2] + (["fa99999"] if self.invent_ids else [])
        reflection = {"text": "Ana keeps returning to woodturning.", "belief": 0.8, "facts": cited}
        return {"reflections": [reflection]}
