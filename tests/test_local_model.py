"""The real bundled all-MiniLM-L6-v2, offline: the default ONNX path, and its fidelity to the
sentence-transformers path (the one place tests pay for torch)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memcli.config import EmbeddingConfig
from memcli.llm import create_embedder
from memcli.llm.local import LocalEmbedder, bundled_model_dir
from tests.cli_runner import Memcli

pytestmark = pytest.mark.skipif(
    bundled_model_dir() is None, reason="install memcli[local] for the bundled model"
)
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "chat.jsonl"
_LONG = " ".join(
    f"Step {i}: the build copies files, runs the linter and uploads a report." for i in range(40)
)
FIDELITY_TEXTS = (
    [
        "My dog loves long walks in the park.",
        "  Surrounding whitespace and a tab\t",
        "",
        "Ünïcödé, accents, CJK 東京 and an emoji 🚀 in one line.",
        "def add(a, b):\n    return a + b  # a short code snippet",
        "user: Can you remind me when the dentist appointment is? I think it was on Tuesday.",
        _LONG,  # far past the 256 word-piece window: cut exactly as sentence-transformers cuts
        _LONG[: len(_LONG) // 3],  # just past the window
        "ok",
    ]
    + [f"Note {n}: buy {n} apples and call the plumber about the leaking sink." for n in range(40)]
)


@pytest.fixture(scope="module")
def embedder():
    return create_embedder(EmbeddingConfig())


def test_bundled_model_gives_unit_vectors_that_mean_something(embedder) -> None:
    vectors = embedder.embed(
        ["My dog loves long walks in the park.", "Our puppy enjoys strolling outside.", "Tax law"]
    )
    assert vectors.shape == (3, 384) and embedder.dim == 384
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


@pytest.mark.slow
def test_onnx_vectors_match_sentence_transformers(embedder) -> None:
    pytest.importorskip("sentence_transformers", reason="install memcli[torch] to compare")
    assert embedder.files.max_length == 256
    reference = LocalEmbedder().embed(FIDELITY_TEXTS)
    vectors = embedder.embed(FIDELITY_TEXTS)
    cosine = np.sum(reference * vectors, axis=1)
    assert cosine.mean() >= 0.9999 and cosine.min() >= 0.999, cosine


def _ingest_then_ask(tmp_path: Path, ingest_backend: str, ask_backend: str) -> list[dict]:
    config = tmp_path / "c.yaml"
    base = f"db: {tmp_path / 'm.db'}\nembedding:\n  offline: true\n"
    config.write_text(base + f"  backend: {ingest_backend}\n")
    cli = Memcli(config=config)
    cli.ok("--json", "ingest", EXAMPLE)
    config.write_text(base + f"  backend: {ask_backend}\n")
    question = "What pet do I have?"
    [asked] = cli.json("ask", "--context-only", "--strategy", "semantic", "-k", 2, question)
    return asked["hits"]


def test_default_config_ingests_and_asks_offline(tmp_path: Path) -> None:
    hits = _ingest_then_ask(tmp_path, "onnx", "onnx")
    assert any("cat Miso" in h["text"] for h in hits)


@pytest.mark.slow
def test_a_store_made_with_torch_is_asked_with_onnx_without_reindex(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="install memcli[torch] to compare")
    hits = _ingest_then_ask(tmp_path, "sentence-transformers", "onnx")
    assert any("cat Miso" in h["text"] for h in hits)
