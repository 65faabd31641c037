"""The prune acceptance experiment: two conversations in one store, forget one, measure both.

    .venv/bin/python -m tests.prune_acceptance ../shared/data/locomo-dev.json [--embedding local]

Each conversation of a LoCoMo file is written to its own file (turns only, never the
annotations), both are ingested into one store and consolidated, and the first is pruned by
source. Reported: evidence recall@10 of every conversation before and after the prune, and of
the kept one in a store that never held the other; whether the removed nodes are exactly
those derived only from the pruned conversation; whether a removed sentence can still be
found by `ask`, in the tables, or (after --vacuum) anywhere in the file.

LoCoMo turn ids (D1:3) repeat across conversations, so a hit only counts for the
conversation its episodes belong to (by session prefix); a hit from the other one is a miss.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from memcli.config import Config, EmbeddingConfig
from memcli.eval import locomo, metrics
from memcli.memory import Memory
from memcli.models import Hit
from memcli.ops.prune import Selection
from memcli.store import Store
from memcli.store.prune import DERIVED_TO_ORIGIN, ORIGIN_TO_DERIVED
from tests.reliability import raw_bytes

K = 10
HITS = 2 * 20  # as `memcli eval locomo` asks with its largest cut-off (20)


def split(path: Path, workdir: Path) -> list[tuple[dict[str, Any], Path]]:
    """Each conversation of a LoCoMo file as its own file holding only its turns."""
    out = []
    for sample in locomo.load_samples(str(path)):
        target = workdir / f"{sample['sample_id']}.json"
        turns = {"sample_id": sample["sample_id"], "conversation": sample["conversation"]}
        target.write_text(json.dumps([turns]), encoding="utf-8")
        out.append((sample, target))
    return out


def origin_episodes(store: Store, node_id: int) -> list[int]:
    """The episodes a node was derived from, walking provenance edges back."""
    seen, frontier, episodes = {node_id}, [node_id], []
    while frontier:
        step = []
        for e in store.edges_of(frontier):
            back = e.dst if e.type in DERIVED_TO_ORIGIN and e.src in frontier else None
            if e.type in (*ORIGIN_TO_DERIVED, "HAS_CONCEPT", "MENTIONS") and e.dst in frontier:
                back = e.src
            if back is not None and back not in seen:
                seen.add(back)
                step.append(back)
        frontier = step
    for node in store.nodes_by_ids(seen - {node_id}).values():
        if node.kind == "episode":
            episodes.append(node.id)
    return sorted(episodes)


def qualified_refs(store: Store, hits: list[Hit]) -> list[str]:
    """`conversation|ref` of every hit in rank order (derived hits: their source turns)."""
    refs: list[str] = []
    for hit in hits:
        ids = [hit.node.id] if hit.node.kind == "episode" else origin_episodes(store, hit.node.id)
        for node in sorted(store.nodes_by_ids(ids).values(), key=lambda n: (n.session, n.seq)):
            conversation = (node.session or "").split(":", 1)[0]
            refs.append(f"{conversation}|{node.ref}")
    return list(dict.fromkeys(refs))


def recall(mem: Memory, sample: dict[str, Any], k: int = K) -> dict[str, float]:
    """Macro evidence recall@k of a conversation's scored questions (percent), and how many
    of the first k refs, over all its questions, came from another conversation."""
    scores, foreign = [], 0
    own = f"{sample['sample_id']}|"
    for qa in locomo.questions(sample):
        hits = mem.ask(qa["question"], k=HITS, context_only=True).hits
        ranked = qualified_refs(mem.store, hits)
        foreign += sum(not ref.startswith(own) for ref in ranked[:k])
        scores.append(metrics.recall_at(ranked, [own + ref for ref in qa["gold"]], k))
    return {f"recall@{k}": 100 * metrics.mean(scores), "foreign_refs": foreign}


def derived_only_from(store: Store, episodes: set[int], others: set[int]) -> set[int]:
    """Derived nodes reachable from `episodes` and not from `others` (the cascade's promise)."""
    return store.derived_from(episodes) - store.derived_from(others)


def _episodes_of(mem: Memory, conversation: str) -> set[int]:
    return set(mem.store.episode_times(mem.space, sessions=[f"{conversation}:*"]))


def _sentence(mem: Memory, episodes: set[int], kept_text: str) -> str:
    """A long removed turn whose words no kept node repeats verbatim."""
    texts = sorted((n.text for n in mem.store.nodes_by_ids(episodes).values()), key=len)
    return next(t for t in reversed(texts) if t not in kept_text)


def run(path: Path, workdir: Path, base: Config) -> dict[str, Any]:
    """The whole experiment with `base`'s models; returns every figure it measured."""
    (first, first_file), (second, second_file) = split(path, workdir)[:2]
    cfg = dataclasses.replace(base, db=str(workdir / "shared.db"), space="default")
    no_llm = cfg.llm.provider == "none"
    out: dict[str, Any] = {"conversations": [first["sample_id"], second["sample_id"]]}
    with Memory(cfg) as mem:
        mem.ingest([str(first_file), str(second_file)])
        out["consolidated"] = mem.consolidate(flush=True, no_llm=no_llm).totals()
        out["nodes_before"] = mem.store.count_nodes(mem.space)
        gone_eps = _episodes_of(mem, first["sample_id"])
        kept_eps = _episodes_of(mem, second["sample_id"])
        expected = gone_eps | derived_only_from(mem.store, gone_eps, kept_eps)
        nodes = list(mem.store.iter_nodes(mem.space))
        before = {n.id for n in nodes}
        kept_text = "\n".join(n.text for n in nodes if n.id not in expected)
        sentence = _sentence(mem, gone_eps, kept_text)
        out["recall_before"] = {s["sample_id"]: recall(mem, s) for s in (first, second)}
        out["in_file_before_prune"] = sentence.encode() in raw_bytes(Path(cfg.db_path))
        report = mem.prune(Selection(sources=(str(first_file),)))
        after = {n.id for n in mem.store.iter_nodes(mem.space)}
        out["removed"] = report.to_dict()
        out["removed_exactly_derived_only"] = before - after == expected
        out["episodes_left_of_pruned"] = len(_episodes_of(mem, first["sample_id"]))
        out["in_file_after_prune"] = sentence.encode() in raw_bytes(Path(cfg.db_path))
        out["recall_after"] = {s["sample_id"]: recall(mem, s) for s in (first, second)}
        found = mem.ask(sentence, k=HITS, context_only=True)
        out["sentence"] = sentence
        out["sentence_found_by_ask"] = any(h.node.text == sentence for h in found.hits)
        out["sentence_in_context"] = sentence in found.context
        out["vacuum"] = mem.prune(Selection(), vacuum=True).to_dict()
        out["sentence_in_file_after_vacuum"] = sentence.encode() in raw_bytes(Path(cfg.db_path))
    alone = dataclasses.replace(cfg, db=str(workdir / "alone.db"))
    with Memory(alone) as mem:
        mem.ingest([str(second_file)])
        mem.consolidate(flush=True, no_llm=no_llm)
        out["recall_kept_alone"] = recall(mem, second)
    return out


def main(argv: list[str] | None = None) -> None:
    """Command-line entry: print the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--embedding", default="none", help="none or local")
    args = parser.parse_args(argv)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="memcli-prune-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        base = Config(embedding=EmbeddingConfig(provider=args.embedding))
        result = run(args.file, workdir, base)
    json.dump(result, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
