"""What a vector index of long messages' passages would cost, next to building the store.

    nice -n 10 .venv/bin/python -m tests.bench.bench_passages BEAM_DIR [--eval-json R.json]
        [--window 230] [--overlap 25] [--chats 1,8]
    nice -n 10 .venv/bin/python -m tests.bench.bench_passages BEAM_DIR --base BASE_TREE
        [--base-config torch.yaml] [--chats 1]

For each chat (`N.jsonl.gz` of the beam-dev layout): its messages, those longer than one
window, their passages (memcli.context.passages, code fences kept whole where they fit), and the
wall and CPU seconds the configured embedder (default: local ONNX all-MiniLM-L6-v2) takes to
embed every passage, as memcli embeds texts (`speaker: text`), in batches of
`embedding.batch_size`. With `--eval-json` (the `--json-out` of `memcli eval chats
BEAM_DIR --consolidate` run on the same machine), each chat's ingest + consolidate seconds
are printed beside it, and the ratio (build + passages) / build: what ingest would cost if it
also embedded the passages.

With `--base`, no passages: each chat is built (`memcli ingest` then `consolidate --no-llm`,
fresh store, separate processes, wall and children's CPU seconds) by the source tree BASE_TREE
(run with PYTHONPATH=BASE_TREE and this interpreter, with `--base-config` if given; the chat
is decompressed first, for trees that do not read gzip) and by this tree, one after the
other, so that machine load hits both alike.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memcli.config import load_config
from memcli.context.passages import passages
from memcli.llm import create_embedder


def _messages(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _passage_texts(
    messages: list[dict[str, Any]], window: int, overlap: int
) -> tuple[int, list[str]]:
    """How many messages are longer than a window, and the texts of all their passages."""
    long, texts = 0, []
    for message in messages:
        text = message.get("content") or ""
        spans = passages(text, window, overlap)
        if spans:
            long += 1
            speaker = message.get("role") or ""
            texts += [f"{speaker}: {text[a:b]}" for a, b in spans]
    return long, texts


def _embed_seconds(embedder: Any, texts: list[str], batch: int) -> tuple[float, float]:
    """Wall and CPU seconds to embed the texts."""
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(texts), batch):
        embedder.embed(texts[start : start + batch])
    return time.perf_counter() - wall, time.process_time() - cpu


def _build(tree: Path | None, chat: Path, config: Path | None, work: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ingest + consolidate --no-llm of one chat into a new store."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    db = work / f"{'base' if tree else 'this'}.db"
    lead = [sys.executable, "-m", "memcli", "--db", str(db)]
    lead += ["--config", str(config)] if config else []
    before, wall = os.times(), time.perf_counter()
    for command in (["ingest", str(chat)], ["consolidate", "--no-llm"]):
        subprocess.run([*lead, *command], env=env, check=True, capture_output=True, cwd=work)
    after = os.times()
    cpu = after.children_user + after.children_system
    return time.perf_counter() - wall, cpu - before.children_user - before.children_system


def _side_by_side(chat: Path, base: Path, base_config: Path | None) -> str:
    """One chat built by the base tree and by this one."""
    with tempfile.TemporaryDirectory(prefix="bench-passages-") as tmp:
        work = Path(tmp)
        plain = work / chat.name.removesuffix(".gz")
        with gzip.open(chat, "rb") as src:
            plain.write_bytes(src.read())
        base_wall, base_cpu = _build(base, plain, base_config, work)
        this_wall, this_cpu = _build(None, chat.resolve(), None, work)  # run from `work`
    return (
        f"base {base_wall:.1f} s wall / {base_cpu:.1f} s CPU; this tree {this_wall:.1f} s wall"
        f" / {this_cpu:.1f} s CPU; ratio {this_wall / base_wall:.2f} wall, "
        f"{this_cpu / base_cpu:.2f} CPU"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("beam_dir", type=Path)
    parser.add_argument("--eval-json", type=Path)
    parser.add_argument("--window", type=int, default=230)
    parser.add_argument("--overlap", type=int, default=25)
    parser.add_argument("--chats", default="")
    parser.add_argument("--base", type=Path)
    parser.add_argument("--base-config", type=Path)
    args = parser.parse_args()
    chats = sorted(args.beam_dir.glob("*.jsonl.gz"), key=lambda p: int(p.name.split(".")[0]))
    chats = [c for c in chats if not args.chats or c.name.split(".")[0] in args.chats.split(",")]
    if args.base:
        for chat in chats:
            print(
                f"chat {chat.name}: {_side_by_side(chat, args.base, args.base_config)}", flush=True
            )
        return
    cfg = load_config()
    embedder = create_embedder(cfg.embedding)
    assert embedder is not None, "the bench needs an embedder (embedding.provider)"
    embedder.embed(["warm-up"])
    builds = {}
    if args.eval_json:
        builds = json.loads(args.eval_json.read_text())["timing"]["conversations"]
    for path in chats:
        name = path.name.split(".")[0]
        messages = _messages(path)
        long, texts = _passage_texts(messages, args.window, args.overlap)
        wall, cpu = _embed_seconds(embedder, texts, cfg.embedding.batch_size)
        line = f"chat {name}: {len(messages)} messages, {long} long, {len(texts)} passages, "
        line += f"embedded in {wall:.1f} s wall / {cpu:.1f} s CPU"
        build = next((t for c, t in builds.items() if c.split(".")[0] == name), None)
        if build:
            total = build["ingest_s"] + build["consolidate_s"]
            line += f"; build {total:.1f} s, ratio {(total + wall) / total:.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
