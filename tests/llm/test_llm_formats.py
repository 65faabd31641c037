"""The JSON schema sent in the form each server accepts (memcli.llm.formats), against fake
servers that accept less and less: the first form a server takes is kept."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memcli.config import LLMConfig
from memcli.llm import ollama as ollama_provider
from memcli.llm import openai_compat
from memcli.llm.retry import Backoff
from tests.fakeserver import FakeModelServer

USER = [{"role": "user", "content": "which city?"}]
SCHEMA = {"title": "City", "type": "object", "properties": {"city": {"type": "string"}}}
PATH = "/v1/chat/completions"


def openai_chat(server: FakeModelServer) -> openai_compat.OpenAIChat:
    cfg = LLMConfig(provider="openai", model="m", url=server.openai_url)
    return openai_compat.create_chat(cfg, backoff=Backoff(base=0.001, cap=0.002))


def _sent(server: FakeModelServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests_to(PATH)]


def test_a_server_that_takes_json_schema_gets_it_once(fake_server: FakeModelServer) -> None:
    chat = openai_chat(fake_server)
    chat.chat(USER, schema=SCHEMA)
    [body] = _sent(fake_server)
    assert body["response_format"]["type"] == "json_schema"
    assert body["messages"] == USER and chat.formats.current == "json_schema"


def test_llama_cpp_python_gets_json_object_with_the_schema(fake_server: FakeModelServer) -> None:
    """llama-cpp-python's server answers json_schema with a 500 naming response_format, and
    constrains decoding to {"type": "json_object", "schema": ...}."""
    fake_server.structured = "json_object+schema"
    fake_server.reply('{"city": "Lyon"}', '{"city": "Nice"}')
    chat = openai_chat(fake_server)
    assert chat.chat(USER, schema=SCHEMA).text == '{"city": "Lyon"}'
    assert chat.chat(USER, schema=SCHEMA).text == '{"city": "Nice"}'
    first, second, third = _sent(fake_server)
    assert first["response_format"]["type"] == "json_schema"
    for body in (second, third):  # remembered: the refused form is not tried again
        assert body["response_format"] == {"type": "json_object", "schema": SCHEMA}
        assert body["messages"] == USER  # the server has the schema: not in the prompt
    assert chat.formats.current == "json_object+schema" and chat.formats.constrained


def test_json_object_only_carries_the_schema_in_a_system_message(
    fake_server: FakeModelServer,
) -> None:
    fake_server.structured = "json_object"
    chat = openai_chat(fake_server)
    chat.chat(USER, schema=SCHEMA)
    *_, last = _sent(fake_server)
    assert last["response_format"] == {"type": "json_object"}
    guide = last["messages"][0]
    assert guide["role"] == "system" and json.dumps(SCHEMA) in guide["content"]
    assert chat.formats.current == "json_object" and not chat.formats.constrained


def test_a_server_without_response_format_still_gets_the_schema(
    fake_server: FakeModelServer,
) -> None:
    fake_server.structured = "prompt"
    fake_server.reply('{"city": "Metz"}')
    chat = openai_chat(fake_server)
    assert chat.chat(USER, schema=SCHEMA).text == '{"city": "Metz"}'
    *_, last = _sent(fake_server)
    assert "response_format" not in last and json.dumps(SCHEMA) in last["messages"][0]["content"]
    assert len(_sent(fake_server)) == 4  # json_schema, json_object+schema, json_object, none


def test_a_plain_chat_sends_no_response_format(fake_server: FakeModelServer) -> None:
    fake_server.structured = "prompt"
    openai_chat(fake_server).chat(USER)
    [body] = _sent(fake_server)
    assert "response_format" not in body and body["messages"] == USER


def test_an_error_that_does_not_name_the_format_is_not_a_refusal(
    fake_server: FakeModelServer,
) -> None:
    fake_server.fail_next(5, status=500, message="out of memory")
    with pytest.raises(Exception, match="out of memory"):
        openai_chat(fake_server).chat(USER, schema=SCHEMA)
    assert all(b["response_format"]["type"] == "json_schema" for b in _sent(fake_server))


def test_ollama_sends_the_schema_as_format(fake_server: FakeModelServer) -> None:
    cfg = LLMConfig(provider="ollama", model="m", url=fake_server.ollama_url)
    chat = ollama_provider.create_chat(cfg)
    chat.chat(USER, schema=SCHEMA)
    [request] = fake_server.requests_to("/api/chat")
    assert request.body["format"] == SCHEMA and request.body["messages"] == USER
