"""Model providers behind two small protocols and a registry of lazily imported modules.

Adding a provider is one file in this package plus one line in EMBEDDERS or CHAT_MODELS.
Provider modules expose `create_embedder(cfg)` and/or `create_chat(cfg)`; they are
imported only when chosen, so `memcli --help` never pays for torch, httpx or ollama.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from memcli.errors import ConfigError, did_you_mean

if TYPE_CHECKING:
    from memcli.config import EmbeddingConfig, LLMConfig
    from memcli.llm.window import PromptTooLong, Window


class Embedder(Protocol):
    """Turns texts into unit-length vectors."""

    provider: str
    model: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> Any:
        """A float32 array of shape (len(texts), dim), each row L2-normalised: texts to store."""
        ...

    def embed_queries(self, texts: list[str]) -> Any:
        """As `embed`, for texts searched with (a model may embed questions differently)."""
        ...


@dataclass
class ChatReply:
    """What a chat model said, with the tokens it cost."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    truncated: bool = False  # the reply hit its token limit (finish_reason "length")


class ChatModel(Protocol):
    """Answers a list of messages, optionally constrained to a JSON schema."""

    provider: str
    model: str

    def chat(
        self, messages: list[dict[str, str]], schema: dict[str, Any] | None = None
    ) -> ChatReply: ...


class BaseChat:
    """What chat providers share: the model and its settings, a bound on the requests in
    flight when callers share one model across threads (`with self._slots:`), and the
    model's context window (memcli.llm.window), found on first use."""

    provider = ""
    #: The window assumed when neither the config nor the server states one.
    default_context = 8192

    def __init__(self, cfg: LLMConfig) -> None:
        self.model = cfg.model
        self.temperature = cfg.temperature
        self._slots = threading.BoundedSemaphore(max(1, cfg.concurrency))
        self._context_setting = cfg.context_length
        self._max_reply = cfg.max_tokens
        self._window: Window | None = None
        self._window_lock = threading.Lock()

    def server_context(self) -> int | None:
        """The context size the server states for this model (providers that can ask)."""
        return None

    def window(self) -> Window:
        """The model's context window: from the config, else the server, else the default."""
        from memcli.llm.window import Window

        with self._window_lock:
            if self._window is None:
                size, source = self._context_setting, "config"
                if not size:
                    size, source = self.server_context() or 0, "server"
                if not size:
                    size, source = self.default_context, "default"
                self._window = Window(size, source, self._max_reply)
            return self._window

    def too_long(self, detail: str) -> PromptTooLong:
        """The error for a prompt that does not fit the window."""
        from memcli.llm.window import PromptTooLong

        window = self.window()
        return PromptTooLong(
            f"the prompt does not fit {self.provider}:{self.model}'s context of "
            f"{window.context} tokens ({window.source}) with {window.reply} left for the "
            f"reply: {detail}",
            window.context,
        )

    def check_fits(self, messages: list[dict[str, str]]) -> None:
        """PromptTooLong, before anything is sent, when `messages` do not fit the window."""
        window = self.window()
        if not window.fits(messages):
            raise self.too_long(
                f"it takes about {window.server_tokens(messages)} tokens, "
                f"{window.prompt_budget} fit"
            )

    def learn_refusal(self, message: str, body: Any, messages: list[dict[str, str]]) -> bool:
        """Take in what a server said when it refused a prompt as too long; True when the
        window changed (the caller tries again: it fails fast if it still does not fit)."""
        from memcli.llm.window import stated_limit, stated_prompt_tokens

        window = self.window()
        before = (window.context, window.ratio)
        tokens = stated_prompt_tokens(message)
        if tokens:
            window.learn(messages, tokens)
        window.shrink(stated_limit(body, message))
        if (window.context, window.ratio) == before:
            # Nothing stated: count tokens more cautiously from now on.
            window.learn(messages, int(window.server_tokens(messages) * 1.2))
            return False
        return True


EMBEDDERS: dict[str, str] = {
    "local": "memcli.llm.local",
    "ollama": "memcli.llm.ollama",
    "openai": "memcli.llm.openai_compat",
}

CHAT_MODELS: dict[str, str] = {
    "ollama": "memcli.llm.ollama",
    "openai": "memcli.llm.openai_compat",
}


def _module_for(registry: dict[str, str], name: str, what: str) -> Any:
    if name not in registry:
        raise ConfigError(
            f"unknown {what} provider {name!r}{did_you_mean(name, registry)}",
            fix=f"choose one of: {', '.join([*registry, 'none'])}",
        )
    return importlib.import_module(registry[name])


def _require_model(section: str, provider: str, model: str, example: str) -> None:
    if not model.strip():
        raise ConfigError(
            f"{section}.model is empty, and the {provider} provider needs a model name",
            fix=f"set {section}.model in the config or MEMCLI_{section.upper()}_MODEL "
            f"(e.g. {example}), or set {section}.provider to none",
        )


def check_embedding(cfg: EmbeddingConfig) -> Any:
    """The embedding provider's module; ConfigError for an unknown provider or no model."""
    if cfg.provider == "none":
        return None
    module = _module_for(EMBEDDERS, cfg.provider, "embedding")
    _require_model("embedding", cfg.provider, cfg.model, "all-MiniLM-L6-v2 or nomic-embed-text")
    if cfg.model == "auto" and cfg.provider != "local":
        raise ConfigError(
            "embedding.model auto chooses between the two local models memcli ships, not "
            f"among the {cfg.provider} provider's models",
            fix="name the model in embedding.model (e.g. nomic-embed-text for ollama)",
        )
    return module


def create_embedder(cfg: EmbeddingConfig) -> Embedder | None:
    """The configured embedder, or None when embeddings are switched off (`none`).
    `auto` with no store to choose for is all-MiniLM-L6-v2 (memcli.llm.choose_model)."""
    module = check_embedding(cfg)
    if module is None:
        return None
    from memcli.llm.model_files import without_auto

    return module.create_embedder(without_auto(cfg))


def create_chat(cfg: LLMConfig) -> ChatModel | None:
    """The configured chat model, or None when no LLM is configured (`none`)."""
    if cfg.provider == "none":
        return None
    module = _module_for(CHAT_MODELS, cfg.provider, "llm")
    _require_model("llm", cfg.provider, cfg.model, "qwen2.5:7b-instruct or gpt-4o-mini")
    return module.create_chat(cfg)
