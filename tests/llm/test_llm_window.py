"""A chat model's context window: where its size comes from, prompts that do not fit, the
reply's token limit, and replies cut by it (memcli.llm.window), against the fake server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from memcli.config import LLMConfig
from memcli.llm import ollama as ollama_provider
from memcli.llm import openai_compat
from memcli.llm.cached import CachedChat, cache_key
from memcli.llm.retry import Backoff
from memcli.llm.structured import ask_structured
from memcli.llm.window import PromptTooLong, Window, stated_limit
from memcli.store import open_store
from tests.fakeserver import ROOMY, FakeModelServer

FAST = Backoff(base=0.001, cap=0.002)
PROVIDERS = {"ollama": ollama_provider, "openai": openai_compat}
CHAT_PATH = {"ollama": "/api/chat", "openai": "/v1/chat/completions"}
both = pytest.mark.parametrize("provider", ["ollama", "openai"])


def chat_model(server: FakeModelServer, provider: str, **settings: Any) -> Any:
    url = server.ollama_url if provider == "ollama" else server.openai_url
    cfg = LLMConfig(provider=provider, model="fake", url=url, **settings)
    return PROVIDERS[provider].create_chat(cfg, backoff=FAST)


def words(n: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": " ".join(f"w{i}" for i in range(n))}]


def sent_limit(server: FakeModelServer, provider: str) -> int:
    body = server.requests_to(CHAT_PATH[provider])[-1].body
    return body["options"]["num_predict"] if provider == "ollama" else body["max_tokens"]


@both
def test_the_window_the_server_states_is_used(fake_server: FakeModelServer, provider: str) -> None:
    fake_server.context_length = 4096
    chat = chat_model(fake_server, provider)
    chat.chat(words(5))
    window = chat.window()
    assert (window.context, window.source) == (4096, "server")
    assert sent_limit(fake_server, provider) == window.reply == 1024  # a quarter of it


@both
def test_a_configured_window_wins_and_ollama_is_sent_it(
    fake_server: FakeModelServer, provider: str
) -> None:
    chat = chat_model(fake_server, provider, context_length=3000, max_tokens=100)
    chat.chat(words(5))
    assert (chat.window().context, chat.window().source) == (3000, "config")
    assert sent_limit(fake_server, provider) == 100
    body = fake_server.requests_to(CHAT_PATH[provider])[0].body
    if provider == "ollama":
        assert body["options"]["num_ctx"] == 3000
    assert not fake_server.requests_to("/props") and not fake_server.requests_to("/api/show")


@both
def test_without_a_stated_window_the_provider_default_is_assumed(
    fake_server: FakeModelServer, provider: str
) -> None:
    fake_server.advertise_context = False
    chat = chat_model(fake_server, provider)
    chat.chat(words(5))
    expected = 2048 if provider == "ollama" else 8192
    assert (chat.window().context, chat.window().source) == (expected, "default")
    if provider == "ollama":  # Ollama keeps its own window unless memcli is told one
        assert "num_ctx" not in fake_server.requests_to("/api/chat")[0].body["options"]


@both
def test_a_prompt_too_long_is_refused_before_anything_is_sent(
    fake_server: FakeModelServer, provider: str
) -> None:
    chat = chat_model(fake_server, provider, context_length=1000)
    with pytest.raises(PromptTooLong) as caught:
        chat.chat(words(900))
    assert not fake_server.requests_to(CHAT_PATH[provider])
    assert caught.value.exit_code == 5 and "llm.context_length" in (caught.value.fix or "")
    assert "1000 tokens (config)" in caught.value.message


def test_the_window_a_refusal_states_is_learned_and_the_prompt_sent_again(
    fake_server: FakeModelServer,
) -> None:
    """llama-cpp-python states no window; it refuses a prompt too long for it, and says so."""
    fake_server.advertise_context = False
    fake_server.context_length = 2048
    chat = chat_model(fake_server, "openai")
    fake_server.reply("fine")
    assert chat.chat(words(1200)).text == "fine"
    first, second = (r.body for r in fake_server.requests_to("/v1/chat/completions"))
    assert first["max_tokens"] == 2048 and second["max_tokens"] == 512
    assert (chat.window().context, chat.window().source) == (2048, "server error")
    with pytest.raises(PromptTooLong):  # now known not to fit: not sent at all
        chat.chat(words(1700))
    assert len(fake_server.requests_to("/v1/chat/completions")) == 2


def test_a_reply_ended_by_the_window_before_max_tokens_teaches_the_window(
    fake_server: FakeModelServer,
) -> None:
    """llama-cpp-python shortens max_tokens to what its window has left without a word: a
    reply stopped short of max_tokens shows where the window ends."""
    fake_server.advertise_context = False
    fake_server.context_length, fake_server.window_mode = 300, "shorten"
    fake_server.reply(" ".join(["x"] * 500))
    chat = chat_model(fake_server, "openai")
    reply = chat.chat(words(100))
    assert reply.truncated and reply.completion_tokens < 2048
    assert fake_server.requests_to("/v1/chat/completions")[0].body["max_tokens"] == 2048
    assert chat.window().context == reply.prompt_tokens + reply.completion_tokens == 300
    assert chat.window().source == "server error"


class City(BaseModel):
    city: str


def test_a_cut_reply_is_never_used_nor_cached(fake_server: FakeModelServer, tmp_path: Path) -> None:
    """What came before the cut parses (a whole object, then prose): still not used."""
    fake_server.reply('{"city": "Paris"} and then the model went on ' + "and on " * 50)
    messages = words(3)
    with open_store(tmp_path / "m.db") as store:
        chat = CachedChat(chat_model(fake_server, "openai", max_tokens=20), store)
        result = ask_structured(chat, messages, City)
        assert result.value is None and result.outcome == "cut"
        assert result.attempts == 1  # not asked again: it would be cut again
        key = cache_key("openai", "fake", messages, City.model_json_schema())
        assert store.cache_get(key) is None
        fake_server.reply('{"city": "Rome"}')
        again = ask_structured(chat, messages, City)
    assert again.value == City(city="Rome")  # asked again, not replayed


def test_the_ratio_to_the_servers_tokens_is_learned() -> None:
    window = Window(2048, "config")
    messages = words(100)
    before = window.server_tokens(messages)
    window.learn(messages, 300)  # the server counted three times memcli's estimate
    assert window.server_tokens(messages) > 2 * before
    window.learn(messages, 10)  # a smaller count never lowers the caution
    assert window.server_tokens(messages) > 2 * before


@pytest.mark.parametrize(
    ("body", "text", "limit"),
    [
        (None, "This model's maximum context length is 2048 tokens. However, you requested", 2048),
        ({"error": {"n_ctx": 4096, "type": "exceed_context_size_error"}}, "exceeds", 4096),
        (None, "the prompt is too long", None),
    ],
)
def test_stated_limits_are_read(body: Any, text: str, limit: int | None) -> None:
    assert stated_limit(body, text) == limit


def test_roomy_fake_states_its_window(fake_server: FakeModelServer) -> None:
    chat = chat_model(fake_server, "ollama")
    chat.chat(words(3))
    assert chat.window().context == ROOMY
