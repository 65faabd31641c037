"""Where the gold evidence of a question type ranks by plain similarity to its topic.

    .venv/bin/python -m tests.bench.evidence_ranks BEAM_DIR [--types event_ordering]
        [--roles user] [--chats 1,8]

For each chat of the beam-dev layout (`N.jsonl.gz` + `N.questions.json`) and each question of
the given types: the messages of the given roles are embedded as they are (the configured
embedder, default local all-MiniLM-L6-v2), ranked by cosine with the question's topic (the
question without the words that ask for a form of answer, memcli.retrieval.shapes), and the
ranks of the question's evidence among them are printed. A question whose evidence sits deep
in that ranking is not one that a better fusion of similarities can answer.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import numpy as np

from memcli.config import load_config
from memcli.llm import create_embedder
from memcli.retrieval.shapes import Shape


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.maximum(np.linalg.norm(rows, axis=-1, keepdims=True), 1e-12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("beam_dir", type=Path)
    parser.add_argument("--types", default="event_ordering")
    parser.add_argument("--roles", default="user")
    parser.add_argument("--chats", default="")
    args = parser.parse_args()
    types, roles = set(args.types.split(",")), set(args.roles.split(","))
    embedder = create_embedder(load_config(None).embedding)
    if embedder is None:
        raise SystemExit("no embedder configured (embedding.provider is 'none')")
    chats = sorted(args.beam_dir.glob("*.questions.json"))
    wanted = set(args.chats.split(",")) - {""}
    total = top10 = 0
    for questions_file in chats:
        name = questions_file.name.removesuffix(".questions.json")
        if wanted and name not in wanted:
            continue
        with gzip.open(args.beam_dir / f"{name}.jsonl.gz", "rt", encoding="utf-8") as lines:
            messages = [m for m in map(json.loads, lines) if m["role"] in roles]
        vectors = unit(np.asarray(embedder.embed([m["content"] for m in messages])))
        position = {str(m["id"]): i for i, m in enumerate(messages)}
        for question in json.loads(questions_file.read_text()):
            if question["type"] not in types:
                continue
            topic = Shape.of(question["question"]).topic
            query = unit(np.asarray(embedder.embed([topic]))[0])
            order = np.argsort(-(vectors @ query))
            rank = {int(j): r + 1 for r, j in enumerate(order)}
            ranks = sorted(
                rank[position[str(e)]] for e in question["evidence"] if str(e) in position
            )
            total += len(ranks)
            top10 += sum(r <= 10 for r in ranks)
            print(f"{name} {question['type']} of {len(messages)}: {ranks} | {topic[:70]}")
    print(f"evidence in the first ten: {top10} of {total}")


if __name__ == "__main__":
    main()
