"""The real bundled all-MiniLM-L6-v2, offline (the one place tests pay for torch)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memcli.config import EmbeddingConfig
from memcli.llm import create_embedder
from memcli.llm.local import bundled_model_dir
from tests.cli_runner import Memcli

pytestmark = pytest.mark.skipif(
    bundled_model_dir() is None, reason="install memcli[local] for the bundled model"
)
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "chat.jsonl"


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


def test_default_config_ingests_and_asks_offline(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = tmp_path / "c.yaml"
    config.write_text(f"db: {tmp_path / 'm.db'}\n")
    cli = Memcli(config=config)
    cli.ok("--json", "ingest", EXAMPLE)
    question = "What pet do I have?"
    [asked] = cli.json("ask", "--context-only", "--strategy", "semantic", "-k", 2, question)
    hits = asked["hits"]
    assert any("cat Miso" in h["text"] for h in hits)
