"""The three-genre bench harness (tests/bench/genres.py) on a tiny annotated chat: the same
figures as `memcli eval chats`, stores built once and reused, patches, saved runs."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memcli.config import Config, EmbeddingConfig
from memcli.eval import chats
from memcli.eval.store_cache import BUILT, code_hash, store_key
from memcli.eval.variants import parse_variant
from memcli.retrieval import people
from memcli.retrieval.params import HybridParams
from memcli.retrieval.shapes import Shape
from memcli.retrieval.tuning import tuned
from memcli.store.sqlite import fts
from tests.bench import genre_report, genres
from tests.bench.genre_patches import patched, split_overrides
from tests.fakeserver import FakeModelServer
from tests.paths import DATA

CHATS = DATA / "eval" / "chats"


@pytest.fixture
def chat_dir(tmp_path: Path) -> Path:
    home = tmp_path / "chats"
    home.mkdir()
    for name in ("garden.jsonl", "garden.questions.json"):
        shutil.copy(CHATS / name, home)
    return home


def _cfg(server: FakeModelServer) -> Config:
    embedding = EmbeddingConfig(provider="ollama", model="fake-embed", url=server.ollama_url)
    return Config(embedding=embedding)


def _evaluate(cfg: Config, chat_dir: Path, cache: Path, *specs: str, **flags: Any):
    args = genres.parse_args([*(f"--variant={s}" for s in specs), "--cache", str(cache)])
    args.baseline = flags.get("baseline")
    args.rebuild, args.fires = flags.get("rebuild", False), flags.get("fires", False)
    genre = genres.Genre("chat", chats.benchmark([str(chat_dir)]))
    prepared = genres.prepare(cfg, [parse_variant(s) for s in specs])
    return genres.evaluate([genre], prepared, cfg, args), genre


def test_the_harness_scores_as_eval_chats_does(
    fake_server: FakeModelServer, chat_dir: Path, tmp_path: Path
) -> None:
    cfg = _cfg(fake_server)
    record, _ = _evaluate(cfg, chat_dir, tmp_path / "cache", "hybrid", "lex=lexical")
    want = chats.run_chats([str(chat_dir)], cfg, ["hybrid", "lexical"], consolidate=True)
    for name, strategy in (("hybrid", "hybrid"), ("lex", "lexical")):
        got = record["variants"][name]["genres"]["chat"]
        expected = want["questions"][strategy]
        assert [r["question"] for r in got] == [r["question"] for r in expected]
        assert [r["recall"] for r in got] == [r["recall"] for r in expected]
        assert genre_report.recall(got, 10) == pytest.approx(
            want["results"][strategy]["recall"]["10"]
        )


def test_stores_are_built_once_and_rebuilt_on_request(
    fake_server: FakeModelServer, chat_dir: Path, tmp_path: Path
) -> None:
    cfg, cache = _cfg(fake_server), tmp_path / "cache"
    _evaluate(cfg, chat_dir, cache, "hybrid")
    (built,) = [b for b in (cache / "chat").glob(f"*/*/{BUILT}")
                if not b.parent.name.endswith("-ingest")]  # fmt: skip
    stamp = built.stat().st_mtime_ns
    again, _ = _evaluate(cfg, chat_dir, cache, "hybrid")
    assert built.stat().st_mtime_ns == stamp, "reused, not rebuilt"
    assert again["builds"]["chat"][0]["consolidate_s"] > 0, "the build's own timing is kept"
    _evaluate(cfg, chat_dir, cache, "hybrid", rebuild=True)
    assert built.stat().st_mtime_ns != stamp
    assert not list((cache / "chat").glob("*/.building-*")), "no scratch left behind"


def test_a_variant_asks_the_store_as_ingest_left_it(
    fake_server: FakeModelServer, chat_dir: Path, tmp_path: Path
) -> None:
    cfg = _cfg(fake_server)
    record, genre = _evaluate(cfg, chat_dir, tmp_path / "cache", "before=hybrid:store=ingest",
                              "after=hybrid", baseline="before")  # fmt: skip
    record["genres"] = {"chat": genres._genre_info(genre)}
    plain = chats.run_chats([str(chat_dir)], cfg, ["hybrid"], consolidate=False)
    got = record["variants"]["before"]["genres"]["chat"]
    assert [r["recall"] for r in got] == [r["recall"] for r in plain["questions"]["hybrid"]]
    kinds = {p.parent.name.endswith("-ingest") for p in (tmp_path / "cache").rglob(BUILT)}
    assert kinds == {True, False}, "one store of each kind"
    args = genres.parse_args(["--types", "--resamples", "200"])
    table = genre_report.types_table(record, "before", args)
    assert "per question type against `before`" in table[0] and "| chat |" in table[4]
    with pytest.raises(SystemExit, match="store=raw"):
        genres.prepare(cfg, [parse_variant("x=hybrid:store=raw")])


def test_the_store_key_follows_the_inputs_settings_and_building_code(
    fake_server: FakeModelServer, chat_dir: Path, tmp_path: Path
) -> None:
    cfg = _cfg(fake_server)
    (conv,) = chats.benchmark([str(chat_dir)]).conversations
    key = store_key(conv, cfg, "code")
    assert store_key(conv, cfg, "code") == key
    assert store_key(conv, cfg, "other code") != key
    fewer = dataclasses.replace(cfg.consolidation, keywords=2)
    assert store_key(conv, dataclasses.replace(cfg, consolidation=fewer), "code") != key
    with (chat_dir / "garden.jsonl").open("a") as handle:
        handle.write('{"id": "m99", "role": "user", "content": "One more turn."}\n')
    assert store_key(conv, cfg, "code") != key

    package = tmp_path / "pkg"
    for name in ("retrieval/hybrid.py", "consolidate/segment.py", "cli/ask.py"):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("x = 1\n")
    before = code_hash(package)
    for reader in ("retrieval/hybrid.py", "cli/ask.py"):
        (package / reader).write_text("x = 2\n")
        assert code_hash(package) == before, f"{reader} only reads stores"
    (package / "consolidate/segment.py").write_text("x = 2\n")
    assert code_hash(package) != before


def test_fires_count_questions_and_turns_each_pattern_marks(
    fake_server: FakeModelServer, chat_dir: Path, tmp_path: Path
) -> None:
    record, _ = _evaluate(
        _cfg(fake_server), chat_dir, tmp_path / "cache", "lex=lexical", "hybrid",
        fires=True, baseline="hybrid",
    )  # fmt: skip
    fires = record["fires"]["chat"]
    assert fires["questions"] == 4 and fires["turns"]["turns"] == 12
    counted = fires["fires"]
    assert counted["shapes._SELF (I/my in the question)"] == 2
    assert counted["role cue by pronoun"] == 2, "recorded while the baseline answered"
    table = "\n".join(genre_report.fires_tables(record))
    assert counted["shapes._ORDER (order, progression)"] == 1
    assert "| shapes._ORDER (order, progression) | 1 |" in table


def _lab(*settings: str) -> HybridParams:
    """`hybrid`'s parameters under a variant's settings, as the harness prepares them."""
    [ready] = genres.prepare(Config(), [parse_variant("v=hybrid:" + ",".join(settings))])
    assert ready.patches == {}
    return tuned(HybridParams, ready.cfg.retrieval.tuning["hybrid"], "hybrid")


def test_the_labs_switches_are_hybrids_own_parameters() -> None:
    ordered = "How did the tomato plants progress from planting to harvest?"
    assert Shape.of(ordered).broad and Shape.of("for A, B, and C?").parts
    assert not Shape.of(ordered, _lab("ordered=off")).broad
    off = _lab("broad=off", "parts=off")
    assert (off.shape_broad, off.shape_parts) == (False, False)
    assert not Shape.of("What is the total across all sessions?", off).broad
    assert Shape.of("for A, B, and C?", off).parts == ()
    assert _lab("shape_broad=off", "shape_parts=false") == off, "the short names stand for them"
    quiet = _lab("names=off", "aliases=off", "pronouns=off")
    assert not (quiet.people_names or quiet.people_aliases or quiet.shape_pronouns)
    assert people.named_speakers(None, "Ana?", quiet) == people.People(frozenset(), "Ana?")


def test_the_context_weight_is_patched_for_one_question_only() -> None:
    assert split_overrides({"context_weight": "0", "broad": "off"}) == (
        {"shape_broad": "off"},
        {"context_weight": "0"},
    )
    with patched({"context_weight": "0"}):
        assert fts.CONTEXT_WEIGHT == 0 and fts.fts_query("tomato").startswith("{text speaker}")
    assert fts.CONTEXT_WEIGHT > 0, "restored afterwards"
    assert fts.fts_query("tomato") == '"tomato"'


def test_a_saved_run_is_compared_question_by_question(
    fake_server: FakeModelServer, chat_dir: Path, tmp_path: Path
) -> None:
    cfg = _cfg(fake_server)
    old, genre = _evaluate(cfg, chat_dir, tmp_path / "cache", "old=lexical")
    saved = tmp_path / "old.json"
    saved.write_text(json.dumps({"commit": "abc", **old}))
    new, _ = _evaluate(cfg, chat_dir, tmp_path / "cache", "new=hybrid")
    keys = genres._question_keys(genre)
    record = {
        "commit": "x", "ks": [5, 10, 20], "load_before": (0, 0, 0), "load_after": (0, 0, 0),
        "genres": {"chat": genres._genre_info(genre)}, "genres_rows": {"chat": keys}, **new,
    }  # fmt: skip
    genres.merge_saved(record, [str(saved)])
    args = genres.parse_args(["--logo"])
    text = genre_report.report(record, "old", args)
    assert "| new | " in text and "(other run)" in text and "leave one genre out" in text
    band = genre_report.bands(record, "new", "old", 10, args).groups["chat"]
    assert band.low <= band.diff <= band.high
    record["genres_rows"]["chat"] = keys[:-1]
    del record["variants"]["old"]
    with pytest.raises(SystemExit, match="did not ask this run's chat questions"):
        genres.merge_saved(record, [str(saved)])


def _row(conversation: str, index: int, recall: float) -> dict[str, Any]:
    return {"conversation": conversation, "index": index, "question": f"q{index}",
            "category": "t", "recall": {"10": recall}, "latency_s": 0.01}  # fmt: skip


def test_halves_compare_on_each_half_of_a_genres_conversations() -> None:
    # Two conversations of 30 questions; the variant wins on every question of "a" only.
    base = [_row(c, i, 0.0) for c in ("a", "b") for i in range(30)]
    better = [_row(r["conversation"], r["index"], float(r["conversation"] == "a")) for r in base]
    record = {
        "genres": {"g": {"conversations": ["a", "b"]}},
        "variants": {"base": {"genres": {"g": base}}, "new": {"genres": {"g": better}}},
    }
    args = genres.parse_args(["--resamples", "500"])
    table = genre_report.halves_table(record, "base", "g", args)
    assert table[2] == "| variant | Δ A: a (30 q) | Δ B: b (30 q) |"
    assert table[4] == "| new | +100.0 [+100.0, +100.0] * | +0.0 [+0.0, +0.0] |"
    record["genres"]["g"]["conversations"] = ["a"]
    assert "no halves" in genre_report.halves_table(record, "base", "g", args)[0]
