"""Model providers against the loopback fake server, with the real ollama client and httpx."""

from __future__ import annotations

from typing import Any

import numpy as np
import ollama
import pydantic
import pytest

from memcli.config import EmbeddingConfig, LLMConfig
from memcli.errors import ProviderUnreachable
from memcli.llm import create_chat, create_embedder, openai_compat
from memcli.llm import ollama as ollama_provider
from memcli.llm.retry import Backoff, parse_retry_after
from memcli.llm.structured import ask_structured, parse_reply, repair_json
from tests.fakeserver import FakeModelServer, count_tokens, fake_embedding, refused_url

FAST = Backoff(base=0.001, cap=0.002)
PROVIDERS = {"ollama": ollama_provider, "openai": openai_compat}
CHAT_PATH = {"ollama": "/api/chat", "openai": "/v1/chat/completions"}
EMBED_PATH = {"ollama": "/api/embed", "openai": "/v1/embeddings"}
USER = [{"role": "user", "content": "what is the capital of France"}]


def base_url(server: FakeModelServer, provider: str) -> str:
    return server.ollama_url if provider == "ollama" else server.openai_url


def chat_model(
    provider: str, url: str, backoff: Backoff = FAST, **settings: Any
) -> ollama_provider.OllamaChat | openai_compat.OpenAIChat:
    cfg = LLMConfig(provider=provider, model=settings.pop("model", "fake"), url=url, **settings)
    return PROVIDERS[provider].create_chat(cfg, backoff=backoff)


def embedder(provider: str, url: str, **settings: Any) -> Any:
    cfg = EmbeddingConfig(provider=provider, model="fake-embed", url=url, **settings)
    return PROVIDERS[provider].create_embedder(cfg, backoff=FAST)


both = pytest.mark.parametrize("provider", ["ollama", "openai"])


# -- embeddings ---------------------------------------------------------------------------------


@both
def test_embeddings_are_unit_rows_sent_in_batches(
    fake_server: FakeModelServer, provider: str
) -> None:
    emb = embedder(provider, base_url(fake_server, provider), batch_size=2)
    texts = ["one", "two words", "three little words", "four", "five"]
    vectors = emb.embed(texts)
    assert vectors.shape == (5, 64) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[2], fake_embedding("three little words"), atol=1e-6)
    batches = [r.body["input"] for r in fake_server.requests_to(EMBED_PATH[provider])]
    assert batches == [texts[0:2], texts[2:4], texts[4:5]]
    assert emb.dim == 64 and len(fake_server.requests) == 3  # dim known, no probe


@both
def test_similar_texts_are_closer(fake_server: FakeModelServer, provider: str) -> None:
    emb = embedder(provider, base_url(fake_server, provider))
    query, near, far = emb.embed(
        ["my cat sleeps on the sofa", "the cat sleeps on my sofa all day", "quarterly tax forms"]
    )
    assert float(query @ near) > float(query @ far) + 0.3


@both
def test_dim_before_any_embedding_sends_a_probe(
    fake_server: FakeModelServer, provider: str
) -> None:
    fake_server.dim = 24
    emb = embedder(provider, base_url(fake_server, provider))
    assert emb.dim == 24
    assert len(fake_server.requests) == 1
    assert emb.embed([]).shape == (0, 24)


def test_registry_builds_the_providers(fake_server: FakeModelServer) -> None:
    cfg = EmbeddingConfig(provider="openai", model="m", url=fake_server.openai_url)
    assert create_embedder(cfg).provider == "openai"
    assert create_chat(LLMConfig(provider="ollama", model="m")).provider == "ollama"


# -- chat ---------------------------------------------------------------------------------------


def test_ollama_chat_sends_options_and_counts_tokens(fake_server: FakeModelServer) -> None:
    fake_server.reply("Paris, of course.")
    reply = chat_model("ollama", fake_server.ollama_url, temperature=0.3).chat(USER)
    assert reply.text == "Paris, of course."
    assert reply.prompt_tokens == count_tokens(USER[0]["content"])
    assert reply.completion_tokens == count_tokens("Paris, of course.")
    body = fake_server.requests_to("/api/chat")[0].body
    assert body["stream"] is False and body["options"]["temperature"] == 0.3
    assert body["messages"] == USER and "format" not in body


def test_ollama_chat_sends_the_schema_as_format(fake_server: FakeModelServer) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    chat_model("ollama", fake_server.ollama_url).chat(USER, schema=schema)
    assert fake_server.requests_to("/api/chat")[0].body["format"] == schema


def test_openai_chat_sends_temperature_and_counts_tokens(fake_server: FakeModelServer) -> None:
    fake_server.reply('{"city": "Paris"}')
    reply = chat_model("openai", fake_server.openai_url).chat(USER)
    assert reply.text == '{"city": "Paris"}'
    assert reply.prompt_tokens == count_tokens(USER[0]["content"])
    assert reply.completion_tokens == count_tokens(reply.text)
    body = fake_server.requests_to("/v1/chat/completions")[0].body
    assert body["temperature"] == 0.0 and "response_format" not in body


def test_openai_chat_sends_the_schema_as_response_format(fake_server: FakeModelServer) -> None:
    schema = {"title": "City answer", "type": "object"}
    chat_model("openai", fake_server.openai_url).chat(USER, schema=schema)
    sent = fake_server.requests_to("/v1/chat/completions")[0].body["response_format"]
    assert sent == {
        "type": "json_schema",
        "json_schema": {"name": "City_answer", "schema": schema, "strict": False},
    }


def test_openai_falls_back_to_json_object_with_the_schema(fake_server: FakeModelServer) -> None:
    fake_server.reject_json_schema = True
    fake_server.reply('{"city": "Paris"}', '{"city": "Rome"}')
    chat = chat_model("openai", fake_server.openai_url)
    schema = {"type": "object", "required": ["city"]}
    assert chat.chat(USER, schema=schema).text == '{"city": "Paris"}'
    assert chat.chat(USER, schema=schema).text == '{"city": "Rome"}'
    sent = fake_server.requests_to("/v1/chat/completions")
    formats = [r.body["response_format"]["type"] for r in sent]
    assert formats == ["json_schema", "json_object", "json_object"]
    # llama-cpp-python's form: the schema itself, so no copy of it in the prompt.
    assert sent[1].body["response_format"]["schema"] == schema
    assert sent[1].body["messages"] == USER


def test_openai_sends_the_key_only_when_the_variable_is_set(
    fake_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMCLI_TEST_KEY", raising=False)
    chat_model("openai", fake_server.openai_url, api_key_env="MEMCLI_TEST_KEY").chat(USER)
    monkeypatch.setenv("MEMCLI_TEST_KEY", "sk-local")
    chat_model("openai", fake_server.openai_url, api_key_env="MEMCLI_TEST_KEY").chat(USER)
    first, second = fake_server.requests_to("/v1/chat/completions")
    assert "authorization" not in first.headers
    assert second.headers["authorization"] == "Bearer sk-local"


# -- retries and failures -----------------------------------------------------------------------


@both
def test_two_server_errors_then_success(fake_server: FakeModelServer, provider: str) -> None:
    fake_server.fail_next(2, status=500)
    fake_server.reply("ok")
    assert chat_model(provider, base_url(fake_server, provider)).chat(USER).text == "ok"
    assert len(fake_server.requests_to(CHAT_PATH[provider])) == 3


@both
def test_persistent_server_errors_name_the_host(
    fake_server: FakeModelServer, provider: str
) -> None:
    fake_server.fail_next(10, status=503, message="model is loading")
    url = base_url(fake_server, provider)
    with pytest.raises(ProviderUnreachable) as caught:
        chat_model(provider, url, max_retries=2).chat(USER)
    assert url in caught.value.message and "503" in caught.value.message
    assert "model is loading" in caught.value.message and "after 3 attempts" in caught.value.message
    assert len(fake_server.requests_to(CHAT_PATH[provider])) == 3 and caught.value.exit_code == 5


@both
def test_rate_limit_is_retried(fake_server: FakeModelServer, provider: str) -> None:
    fake_server.fail_next(1, status=429, message="slow down")
    fake_server.reply("ok")
    assert chat_model(provider, base_url(fake_server, provider)).chat(USER).text == "ok"
    assert len(fake_server.requests_to(CHAT_PATH[provider])) == 2


def test_retry_after_is_honoured(fake_server: FakeModelServer) -> None:
    waits: list[float] = []
    fake_server.fail_next(1, status=429, retry_after=7)
    chat_model("openai", fake_server.openai_url, Backoff(sleep=waits.append)).chat(USER)
    assert waits == [7.0]


@pytest.mark.parametrize(
    ("provider", "fix"), [("ollama", "ollama serve"), ("openai", "llm.url / embedding.url")]
)
def test_connection_refused(provider: str, fix: str) -> None:
    url = refused_url() + ("/v1" if provider == "openai" else "")
    with pytest.raises(ProviderUnreachable) as caught:
        chat_model(provider, url, max_retries=1).chat(USER)
    name = "Ollama" if provider == "ollama" else "the OpenAI-compatible server"
    assert caught.value.message.startswith(f"cannot reach {name} at {url}: ")
    assert "refused" in caught.value.message and fix in (caught.value.fix or "")


@both
def test_embedding_server_refused(provider: str) -> None:
    with pytest.raises(ProviderUnreachable, match="cannot reach"):
        embedder(provider, refused_url()).embed(["hello"])


@both
def test_timeout(fake_server: FakeModelServer, provider: str) -> None:
    fake_server.delay = 1.0
    chat = chat_model(provider, base_url(fake_server, provider), timeout=0.1, max_retries=0)
    with pytest.raises(ProviderUnreachable, match=r"no answer within 0\.1 s") as caught:
        chat.chat(USER)
    assert "llm.timeout" in (caught.value.fix or "")


def test_url_without_a_scheme_is_not_retried() -> None:
    with pytest.raises(ProviderUnreachable) as caught:
        chat_model("openai", "localhost:8000/v1").chat(USER)
    assert "unsupported protocol" in caught.value.message
    assert "attempts" not in caught.value.message and "http://" in (caught.value.fix or "")


@both
def test_dropped_connection_is_retried_then_reported(
    fake_server: FakeModelServer, provider: str
) -> None:
    fake_server.drop_next(1)
    fake_server.reply("ok")
    chat = chat_model(provider, base_url(fake_server, provider), max_retries=1)
    assert chat.chat(USER).text == "ok"
    fake_server.drop_next(2)
    with pytest.raises(ProviderUnreachable, match="disconnected"):
        chat.chat(USER)


@both
def test_malformed_json_is_retried_then_reported(
    fake_server: FakeModelServer, provider: str
) -> None:
    fake_server.malformed_next(1)
    emb = embedder(provider, base_url(fake_server, provider))
    assert emb.embed(["hello"]).shape == (1, 64)
    fake_server.malformed_next(10)
    with pytest.raises(ProviderUnreachable, match="unreadable reply: the body is not JSON"):
        emb.embed(["hello"])


def test_unknown_ollama_model_says_pull_it(fake_server: FakeModelServer) -> None:
    fake_server.models = {"llama3.2:latest"}
    with pytest.raises(ProviderUnreachable) as caught:
        chat_model("ollama", fake_server.ollama_url, model="qwen3:4b").chat(USER)
    assert "HTTP 404" in caught.value.message and "not found" in caught.value.message
    assert "`ollama pull qwen3:4b`" in (caught.value.fix or "")
    assert len(fake_server.requests_to("/api/chat")) == 1  # a missing model is not retried


def test_rejected_key_names_the_variable_but_never_the_key(
    fake_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = "sk-planted-4f9c2a7e1b"
    monkeypatch.setenv("MEMCLI_TEST_KEY", planted)
    fake_server.api_key = "sk-the-right-one"
    with pytest.raises(ProviderUnreachable) as caught:
        chat_model("openai", fake_server.openai_url, api_key_env="MEMCLI_TEST_KEY").chat(USER)
    error = caught.value
    assert "HTTP 401" in error.message and "MEMCLI_TEST_KEY" in (error.fix or "")
    texts = [str(error), repr(error), error.message, error.fix or "", *map(str, error.args)]
    assert all(planted not in text for text in texts)
    assert error.__cause__ is None and error.__context__ is None
    assert len(fake_server.requests_to("/v1/chat/completions")) == 1  # not retried


def test_no_client_exception_escapes_an_embedder(fake_server: FakeModelServer) -> None:
    fake_server.fail_next(1, status=400, message="input too long")
    with pytest.raises(ProviderUnreachable, match="input too long"):
        embedder("ollama", fake_server.ollama_url).embed(["x"])


# -- backoff ------------------------------------------------------------------------------------


def test_backoff_grows_with_jitter_up_to_the_cap() -> None:
    top = Backoff(rand=lambda: 1.0)
    assert [top.delay(n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert Backoff(rand=lambda: 0.0).delay(3) == 1.0
    assert Backoff().delay(2, retry_after=3.5) == 3.5
    assert Backoff(max_wait=60).delay(1, retry_after=3600) == 60


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("2", 2.0),
        ("0.5", 0.5),
        (None, None),
        ("soon", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),
    ],
)
def test_parse_retry_after(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header) == seconds


# -- structured output --------------------------------------------------------------------------


class Fact(pydantic.BaseModel):
    subject: str
    confidence: float


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('```json\n{"a": 1}\n```', '{"a": 1}'),
        ("```\n[1, 2]\n```", "[1, 2]"),
        ('Sure! Here it is: {"a": 1} Hope that helps.', '{"a": 1}'),
        ('{"a": [1, 2,], "b": {"c": 3,},}', '{"a": [1, 2], "b": {"c": 3}}'),
        ('{"note": "commas, ] and } in a string,}"}', '{"note": "commas, ] and } in a string,}"}'),
        ('See [the notes] below.\n{"a": "{x}"}', '{"a": "{x}"}'),
        ('```json\n{"a": 1}\n', '{"a": 1}'),
        ("no json here", "no json here"),
    ],
)
def test_repair_json(text: str, expected: str) -> None:
    assert repair_json(text) == expected


def test_parse_reply_reports_schema_errors_precisely() -> None:
    value, error = parse_reply('{"subject": "sky", "confidence": "high"}', Fact)
    assert value is None and error is not None
    assert "confidence" in error and '"high"' in error and "errors.pydantic.dev" not in error


def ollama_chat(server: FakeModelServer) -> ollama_provider.OllamaChat:
    return chat_model("ollama", server.ollama_url)


@pytest.mark.parametrize(
    "reply",
    [
        '```json\n{"subject": "sky", "confidence": 0.9}\n```',
        'Here you go:\n{"subject": "sky", "confidence": 0.9}\nAnything else?',
        '{"subject": "sky", "confidence": 0.9,}',
    ],
)
def test_structured_repairs_without_asking_again(fake_server: FakeModelServer, reply: str) -> None:
    fake_server.reply(reply)
    result = ask_structured(ollama_chat(fake_server), USER, Fact)
    assert result.value == Fact(subject="sky", confidence=0.9)
    assert result.attempts == 1 and result.error is None and result.ok
    assert fake_server.requests_to("/api/chat")[0].body["format"] == Fact.model_json_schema()


def test_structured_reasks_with_the_validation_error(fake_server: FakeModelServer) -> None:
    fake_server.reply('{"subject": "sky"}', '{"subject": "sky", "confidence": 0.5}')
    result = ask_structured(ollama_chat(fake_server), USER, Fact)
    assert result.value == Fact(subject="sky", confidence=0.5) and result.attempts == 2
    first, second = (r.body for r in fake_server.requests_to("/api/chat"))
    assert second["messages"][:-2] == first["messages"]
    assert second["messages"][-2] == {"role": "assistant", "content": '{"subject": "sky"}'}
    assert "confidence: Field required" in second["messages"][-1]["content"]
    assert result.prompt_tokens == _prompt_tokens(first) + _prompt_tokens(second)


def _prompt_tokens(body: dict[str, Any]) -> int:
    return sum(count_tokens(m["content"]) for m in body["messages"])


def test_structured_gives_up_with_the_reason(fake_server: FakeModelServer) -> None:
    fake_server.responder = lambda body: "I would rather not."
    result = ask_structured(ollama_chat(fake_server), USER, Fact)
    assert result.value is None and result.attempts == 3 and not result.ok
    assert result.error is not None and "not valid JSON" in result.error
    assert result.completion_tokens == 3 * count_tokens("I would rather not.")
    quiet = ask_structured(ollama_chat(fake_server), USER, Fact, max_reasks=0)
    assert quiet.attempts == 1 and quiet.value is None


def test_structured_lets_provider_errors_through() -> None:
    chat = chat_model("openai", refused_url(), max_retries=0)
    with pytest.raises(ProviderUnreachable):
        ask_structured(chat, USER, Fact)


def test_fake_server_streams_when_not_told_otherwise(fake_server: FakeModelServer) -> None:
    fake_server.reply("streamed")
    client = ollama.Client(host=fake_server.ollama_url, timeout=5)
    parts = list(client.chat(model="m", messages=USER, stream=True))
    assert "".join(p.message.content or "" for p in parts) == "streamed" and parts[-1].done
    assert [m.model for m in client.list().models] == ["fake-model:latest"]


def test_cache_replays_valid_exchanges_and_forgets_useless_ones(
    fake_server: FakeModelServer, tmp_path
) -> None:
    from memcli.llm.cached import CachedChat
    from memcli.store import open_store

    class Title(pydantic.BaseModel):
        title: str

    store = open_store(tmp_path / "m.db")
    inner = create_chat(LLMConfig(provider="ollama", model="m", url=fake_server.ollama_url))
    cached = CachedChat(inner, store)
    messages = [{"role": "user", "content": "name it"}]
    fake_server.reply("nonsense", "still nonsense", "more nonsense")
    assert ask_structured(cached, messages, Title).value is None
    fake_server.reply('{"title": "ok"}')
    assert ask_structured(cached, messages, Title).value == Title(title="ok")
    calls = len(fake_server.requests_to("/api/chat"))
    assert calls == 4, "the failed exchange was not replayed from the cache"
    assert ask_structured(cached, messages, Title).value == Title(title="ok")
    assert len(fake_server.requests_to("/api/chat")) == calls
    assert cached.usage.cache_hits == 1
    store.close()
