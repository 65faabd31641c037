"""The scripted models tell each task by the reply schema memcli sends, and read the prompt's
values back from any of the three ways a schema travels. When a reply model or a prompt's
placeholders change, this fails here, naming the task, instead of far away in a stage."""

from __future__ import annotations

import json

import pytest

from memcli.consolidate import schemas
from memcli.eval.answers import JudgeReply
from memcli.ops.answering import AnswerReply
from memcli.prompting import data_block, load, placeholders, render
from tests.fakemodel import TASKS, consolidation_reply, read

REPLIES = {
    "boundaries": schemas.Boundaries,
    "summarize": schemas.SegmentSummary,
    "relate": schemas.TopicLinks,
    "extract": schemas.ExtractReply,
    "reflect": schemas.ReflectionsReply,
    "supersede": schemas.SupersedeReply,
    "answer": AnswerReply,
    "judge": JudgeReply,
}


def bodies(prompt: str, schema: dict[str, object]) -> list[dict[str, object]]:
    """One request as the Ollama, OpenAI json_schema and OpenAI json_object clients send it."""
    user = [{"role": "user", "content": prompt}]
    guide = {"role": "system", "content": "Fit this JSON schema:\n" + json.dumps(schema)}
    native = {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}
    return [
        {"messages": user, "format": schema},
        {"messages": user, "response_format": native},
        {"messages": [guide, *user], "response_format": {"type": "json_object"}},
    ]


def test_every_reply_schema_names_one_task() -> None:
    assert set(TASKS.values()) == set(REPLIES)
    for task, model in REPLIES.items():
        properties = frozenset(model.model_json_schema()["properties"])
        assert TASKS.get(properties) == task, (task, sorted(properties))


@pytest.mark.parametrize("task", sorted(REPLIES))
def test_prompt_values_are_read_back_unfenced(task: str) -> None:
    names = sorted(placeholders(load(task)))
    values = {name: f"[ep{i}] (2023-05-0{i}) Ana: about {name}" for i, name in enumerate(names)}
    prompt = render(task, None, **{n: data_block(v) for n, v in values.items()})
    for body in bodies(prompt, REPLIES[task].model_json_schema()):
        request = read(body)
        assert (request.task, request.values, request.retry) == (task, values, False)
        reply = json.loads(consolidation_reply(body))
        assert REPLIES[task].model_validate(reply)  # a valid reply to that task


def test_a_re_ask_and_a_request_without_schema() -> None:
    prompt = render("boundaries", None, turns=data_block("1. [ep1] (2023-05-01) Ana: hi"))
    schema = schemas.Boundaries.model_json_schema()
    again = [{"role": "user", "content": prompt}, {"role": "assistant", "content": "{}"}]
    assert read({"messages": again, "format": schema}).retry
    plain = {"messages": [{"role": "user", "content": "Say hi."}]}
    assert read(plain).task is None and consolidation_reply(plain) == "{}"
