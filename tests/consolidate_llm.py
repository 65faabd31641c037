"""A scripted chat model for consolidation tests, plugged into the fake server's `responder`.

It recognises each consolidation prompt by its title, reads the ids and turns the prompt
shows, and answers deterministically, so reruns send identical requests. Switches make it
misbehave the way real models do: fenced JSON with trailing commas, a schema violation on
the first try, replies that never validate, and ids that were never in the prompt.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

TASKS = {
    "# Find where the topic changes": "boundaries",
    "# Summarise one topic segment": "summarize",
    "# Judge how a new topic relates": "relate",
    "# Extract facts and topic concepts": "facts",
    "# Draw higher-level observations": "reflect",
}
TOPICS = ("pottery", "adoption", "marathon", "camping")
_ID = re.compile(r"\[((?:ep|sg|fa)\d+)\]")
_TURN = re.compile(r"^\[(ep\d+)\] \(([^)]*)\) (\w+): (.*?)(?:  \{dates: (.*)\})?$", re.M)
_NUMBERED = re.compile(r"^(\d+)\. \[ep\d+\] \([^)]*\) \w+: (.*)$", re.M)


def section(prompt: str, title: str) -> str:
    """The text under a '## title' heading, up to the next heading."""
    start = prompt.index(f"## {title}")
    end = prompt.find("\n## ", start + 1)
    return prompt[start : end if end != -1 else len(prompt)]


class ScriptedLLM:
    """Callable responder: body of a chat request -> reply text."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.reasks: Counter[str] = Counter()
        self.invent_ids = True  # add ids that the prompt never showed
        self.fenced = False  # wrap replies in prose and ```json fences, with trailing commas
        self.bad_first: set[str] = set()  # tasks whose first reply misses required fields
        self.always_bad: set[str] = set()  # tasks whose replies never validate

    def __call__(self, body: dict[str, Any]) -> str:
        messages = body["messages"]
        prompt = messages[0]["content"]
        task = next(name for title, name in TASKS.items() if prompt.startswith(title))
        self.calls[task] += 1
        if len(messages) > 1:
            self.reasks[task] += 1
        if task in self.always_bad or (task in self.bad_first and len(messages) == 1):
            return json.dumps({"unexpected": True})
        reply = getattr(self, task)(prompt)
        if self.fenced:
            text = json.dumps(reply, indent=1).replace("\n}", ",\n}")
            return f"Sure! Here is the JSON you asked for:\n```json\n{text}\n```\nHope it helps."
        return json.dumps(reply)

    def boundaries(self, prompt: str) -> dict[str, Any]:
        starts = [int(n) for n, text in _NUMBERED.findall(prompt) if text.startswith("By the way")]
        return {"boundaries": [*starts, *([999] if self.invent_ids else [])]}

    def summarize(self, prompt: str) -> dict[str, Any]:
        turns = _TURN.findall(prompt)
        text = " ".join(t[3] for t in turns)
        words = [t for t in TOPICS if t in text.lower()]
        return {"summary": f"{turns[0][2]} and others talk: {turns[0][3]}", "keywords": words}

    def relate(self, prompt: str) -> dict[str, Any]:
        ids = _ID.findall(prompt.split("Earlier segments:")[1])
        links = [
            {"id": sid, "label": "semantic", "confidence": 0.9 if i == 0 else 0.3}
            for i, sid in enumerate(ids)
        ]
        if self.invent_ids:
            links.append({"id": "sg999", "label": "support", "confidence": 1.0})
        return {"links": links}

    def facts(self, prompt: str) -> dict[str, Any]:
        facts: list[dict[str, Any]] = []
        concepts: dict[str, list[str]] = {}
        for n, (ep, _, speaker, text, dates) in enumerate(_TURN.findall(section(prompt, "New"))):
            topic = next((t for t in TOPICS if t in text.lower()), None)
            if topic is None:
                continue
            # Alternate plural and singular labels: the store must keep one concept.
            label = f"{topic}_plans" if n % 2 else f"{topic}_plan"
            date = re.search(r"= (\d{4}-\d{2}-\d{2})", dates or "")
            facts.append(
                {
                    "text": f"{speaker} talked about {topic}: {text}",
                    "belief": 0.9,
                    "sources": [ep, *(["ep99999"] if self.invent_ids else [])],
                    "concepts": [label],
                    "date": date.group(1) if date else None,
                }
            )
            concepts.setdefault(label, []).append(ep)
        if self.invent_ids:
            facts.append({"text": "An invented claim.", "belief": 1.0, "sources": ["ep424242"]})
        return {
            "facts": facts,
            "concepts": [{"label": k, "episodes": v} for k, v in concepts.items()],
        }

    def reflect(self, prompt: str) -> dict[str, Any]:
        ids = _ID.findall(section(prompt, "New facts"))
        if len(ids) < 2:
            return {"reflections": []}
        cited = ids[:2] + (["fa99999"] if self.invent_ids else [])
        reflection = {"text": "Ana keeps returning to pottery.", "belief": 0.8, "facts": cited}
        return {"reflections": [reflection]}
