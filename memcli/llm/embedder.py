"""What every embedder shares: the vector length, batching and unit-length rows.

A provider subclasses `BaseEmbedder` and writes `_embed_batch` (one request for a batch of
texts), or, behind a model server, hands its request function to `RemoteEmbedder`; one
that batches and normalises by itself overrides `_embed_texts` instead.
numpy is imported on first use, so importing this module costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import numpy as np

    from memcli.config import EmbeddingConfig
    from memcli.llm import Embedder

T = TypeVar("T")

#: Texts per `embed` call when a pipeline (ingest, consolidation, reindex) embeds many:
#: progress moves on after each call, and memory stays bounded.
PIPELINE_BATCH = 256


def batched(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """Consecutive slices of at most `size` items."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def unit_rows(rows: Any) -> np.ndarray:
    """Rows as a float32 array, each scaled to length 1 (all-zero rows are left as they are)."""
    import numpy as np

    matrix = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


def embed_all(
    embedder: Embedder, texts: Sequence[str], advance: Callable[[int], None] | None = None
) -> list[Any]:
    """One vector per text, `PIPELINE_BATCH` texts per call; `advance(n)` after each call."""
    vectors: list[Any] = []
    for batch in batched(texts, PIPELINE_BATCH):
        vectors.extend(embedder.embed(list(batch)))
        if advance is not None:
            advance(len(batch))
    return vectors


class BaseEmbedder:
    """An embedder: `provider`, `model`, `dim`, `embed(texts)` for what is stored and
    `embed_queries(texts)` for what is searched with, with batching."""

    provider = ""
    # Models trained with instructions (e5: "query: ", "passage: ") see them here; for the
    # others both are empty and a query is embedded like any stored text.
    query_prefix = ""
    passage_prefix = ""
    # How the default strategy reads this model's cosines: (cosine − shift) × stretch, so
    # that they spread as all-MiniLM-L6-v2's do (its weights were fitted on those).
    cosine_scale: tuple[float, float] = (0.0, 1.0)

    def __init__(self, model: str, batch_size: int) -> None:
        self.model = model
        self.batch_size = max(1, batch_size)
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        """Vector length; learnt from the first vectors made, or from a one-word probe."""
        if self._dim is None:
            self.embed(["probe"])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text, for texts to be stored."""
        return self._embed_prefixed(texts, self.passage_prefix)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors for search queries (as `embed` for most models)."""
        return self._embed_prefixed(texts, self.query_prefix)

    def _embed_prefixed(self, texts: list[str], prefix: str) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        matrix = self._embed_texts([prefix + t for t in texts] if prefix else texts)
        self._dim = int(matrix.shape[1])
        return matrix

    def _embed_texts(self, texts: list[str]) -> np.ndarray:
        """Unit rows for texts, `batch_size` texts per `_embed_batch` request."""
        rows: list[Any] = []
        for batch in batched(texts, self.batch_size):
            rows.extend(self._embed_batch(list(batch)))
        return unit_rows(rows)

    def _embed_batch(self, batch: list[str]) -> Sequence[Any]:
        """The provider's vectors for one batch of texts (any scale, one per text)."""
        raise NotImplementedError


class RemoteEmbedder(BaseEmbedder):
    """An embedder behind a model server: each batch is one `request(model, batch)`."""

    def __init__(
        self, provider: str, cfg: EmbeddingConfig, request: Callable[[str, list[str]], Any]
    ) -> None:
        super().__init__(cfg.model, cfg.batch_size)
        self.provider = provider
        self._request = request

    def _embed_batch(self, batch: list[str]) -> Sequence[Any]:
        return self._request(self.model, batch)
