"""Local embeddings with onnxruntime and `tokenizers`: the `local` provider's default backend.

No torch: the model's safetensors weights become an ONNX graph once (memcli.llm.onnx_graph),
cached by the weights' checksum; later runs only map the cached graph. Texts are cut at the
model's window as sentence-transformers cuts them, and run in batches of similar length.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from memcli.errors import ConfigError
from memcli.llm.embedder import BaseEmbedder
from memcli.llm.model_files import ModelFiles, cache_root, file_sha256, locate_model
from memcli.progress import Progress

if TYPE_CHECKING:
    from memcli.config import EmbeddingConfig


# Padded word pieces per run. Runs cost little on their own, so short texts go in small
# groups and long ones alone, with almost no padding: on a 2-core machine, embedding the
# LoCoMo dev turns took 0.69× the CPU time of fixed batches of 64 (256 to 128 were alike).
TOKENS_PER_BATCH = 256
RUNS_IN_FLIGHT = 2


class OnnxEmbedder(BaseEmbedder):
    """A BERT sentence encoder on onnxruntime, loaded on first use."""

    provider = "local"

    def __init__(self, cfg: EmbeddingConfig, progress: Progress | None = None) -> None:
        super().__init__(cfg.model, cfg.batch_size)
        self.cfg = cfg
        self._progress = progress
        self._files: ModelFiles | None = None
        self._session: Any = None
        self._tokenizer: Any = None

    @property
    def files(self) -> ModelFiles:
        """The checked model directory (found, or downloaded, on first use)."""
        if self._files is None:
            self._files = locate_model(self.cfg, self._progress)
        return self._files

    @property
    def dim(self) -> int:
        """Vector length: the model's hidden size."""
        return int(self.files.config["hidden_size"])

    def _graph_path(self) -> str:
        from safetensors import SafetensorError

        from memcli.llm.onnx_graph import cached_graph

        files, root = self.files, cache_root(self.cfg)
        weights = files.directory / "model.safetensors"
        try:
            checksum = file_sha256(weights, root / "checksums")
            config = files.directory / "config.json"
            graph = cached_graph(weights, checksum, config, files.pooling, root / "onnx")
        except (SafetensorError, ValueError, KeyError) as exc:
            raise _unusable(files, f"its weights do not fit a BERT graph ({exc})") from None
        except OSError as exc:
            raise graph_unwritable(root, exc) from None
        return str(graph)

    def _read_tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(self.files.directory / "tokenizer.json"))
        except Exception as exc:  # the library raises plain Exception for a bad file
            raise _unusable(self.files, f"cannot read tokenizer.json ({exc})") from None
        tokenizer.no_padding()  # padding happens per batch, in embed()
        tokenizer.enable_truncation(max_length=self.files.max_length)
        return tokenizer

    def _load(self) -> tuple[Any, Any]:
        if self._session is None:
            import onnxruntime

            tokenizer = self._read_tokenizer()
            options = onnxruntime.SessionOptions()
            # onnxruntime would take one thread here; every core runs about twice as fast.
            options.intra_op_num_threads = self.cfg.threads or os.cpu_count() or 1
            options.log_severity_level = 3
            # Idle threads sleep instead of spinning: on a busy machine the spinning cost
            # more CPU than it saved.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            self._session = onnxruntime.InferenceSession(
                self._graph_path(), options, providers=["CPUExecutionProvider"]
            )
            self._tokenizer = tokenizer
        return self._session, self._tokenizer

    def _token_ids(self, texts: list[str]) -> list[list[int]]:
        """Each text's word-piece ids, specials included, cut at the model's window."""
        return [e.ids for e in self._load()[1].encode_batch(texts)]

    def _embed_texts(self, texts: list[str]) -> Any:
        """Unit-length float32 vectors (normalised inside the graph), in the order given."""
        import numpy as np

        session, _ = self._load()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        pieces = self._token_ids(texts)

        def run(rows: list[int]) -> None:
            ids, mask = _padded([pieces[i] for i in rows])
            out[rows] = session.run(["embeddings"], {"input_ids": ids, "attention_mask": mask})[0]

        groups = _batches(pieces, self.batch_size)
        if len(groups) == 1:
            run(groups[0])
            return out
        # Two batches in flight keep the session's threads busy while the other one is in
        # its serial steps: 0.88x the wall time of one at a time on a 2-core machine (LoCoMo
        # dev turns), the same vectors. onnxruntime releases the GIL while it runs.
        with ThreadPoolExecutor(RUNS_IN_FLIGHT) as pool:
            for _ in pool.map(run, groups):
                pass
        return out


def _batches(pieces: list[list[int]], most: int) -> list[list[int]]:
    """Row numbers grouped shortest first, each group within TOKENS_PER_BATCH once padded."""
    order = sorted(range(len(pieces)), key=lambda i: len(pieces[i]))
    groups: list[list[int]] = []
    for i in order:
        width = len(pieces[i])  # the longest so far: the order is by length
        if groups and len(groups[-1]) < most and (len(groups[-1]) + 1) * width <= TOKENS_PER_BATCH:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def graph_unwritable(root: Any, exc: OSError) -> ConfigError:
    """The error for a model graph that cannot be written under the cache directory."""
    return ConfigError(
        f"cannot write the embedding model's graph under {root} ({exc})",
        fix="set embedding.cache_dir to a writable directory",
    )


def _unusable(files: ModelFiles, reason: str) -> ConfigError:
    return ConfigError(
        f"cannot use the embedding model in {files.directory} ({files.source}): {reason}",
        fix="use a BERT sentence-transformers model directory, or set embedding.backend to "
        "sentence-transformers (pip install 'memcli[torch]')",
    )


def _padded(batch: list[list[int]]) -> tuple[Any, Any]:
    """Token ids right-padded with 0 to the batch's longest, and the matching mask."""
    import numpy as np

    width = max(len(ids) for ids in batch)
    ids = np.zeros((len(batch), width), dtype=np.int64)
    mask = np.zeros((len(batch), width), dtype=np.int64)
    for row, pieces in enumerate(batch):
        ids[row, : len(pieces)] = pieces
        mask[row, : len(pieces)] = 1
    return ids, mask


def create_embedder(cfg: EmbeddingConfig) -> OnnxEmbedder:
    """The onnx backend of the `local` provider."""
    return OnnxEmbedder(cfg)
