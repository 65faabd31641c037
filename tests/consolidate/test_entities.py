"""Entities: names found by rules, the LLM's descriptions and triplets, `inspect entity`."""

from __future__ import annotations

import json
from pathlib import Path

from memcli.consolidate.names import CaseStats, mentions
from memcli.text import canonical_key
from tests.cli_runner import Memcli
from tests.consolidate_helpers import config_file, opened
from tests.fakemodel import ScriptedLLM
from tests.fakeserver import FakeModelServer
from tests.stores import StoreCache


def _surfaces(text: str, stats: CaseStats | None = None) -> dict[str, str | None]:
    return {m.surface: m.value for m in mentions(text, stats)}


def test_rules_find_names_identifiers_and_values() -> None:
    found = _surfaces("We met Grace Hopper, then moved to Vue.js v3.4.21 with TLS certificates.")
    assert "Grace Hopper" in found and "TLS" in found
    assert found["Vue.js"] == "v3.4.21"
    assert "We" not in found  # a sentence start is not a name by itself
    assert not _surfaces("ok thanks, see you on Monday!")  # calendar words are dates


def test_sentence_start_is_a_name_only_when_written_capitalised_elsewhere() -> None:
    stats = CaseStats.of(["we talked to Marlow about it", "Marlow said yes", "Later we left"])
    found = _surfaces("Marlow called. Later it rained.", stats)
    assert "Marlow" in found and "Later" not in found


def test_capitals_the_space_mostly_writes_in_lower_case_are_no_acronym() -> None:
    stats = CaseStats.of(
        ["ok, btw the build passed", "ok then", "we sign it with TLS and ask NASA", "OK BTW done"]
    )
    found = _surfaces("OK, BTW the TLS key from NASA expired.", stats)
    assert "TLS" in found and "NASA" in found
    assert "OK" not in found and "BTW" not in found
    assert "OK" in _surfaces("OK, the TLS key expired.")  # no statistics: shape alone


def test_canonical_key_folds_case_and_possessives() -> None:
    assert canonical_key("Grace's") == canonical_key("grace") == canonical_key("GRACE")
    assert canonical_key("Vue.js") == canonical_key("vue.js")


def test_no_llm_entities_have_mentions_and_an_inspect_view(
    stores: StoreCache, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    stores.copy("chat-no-llm", tmp_path / "memory.db")
    mem = opened(tmp_path, fake_server, llm=False)
    entities = {e.text: e for e in mem.store.iter_nodes(mem.space, "entity")}
    assert "Lisbon" in entities
    mentions_ = mem.store.edges_of([entities["Lisbon"].id], ["MENTIONS"])
    assert mentions_ and all(e.dst == entities["Lisbon"].id for e in mentions_)
    cfg = config_file(tmp_path, fake_server, llm=False)
    result = Memcli(config=cfg)("--json", "inspect", "entity", "lisbon")
    assert result.exit_code == 0, result.stderr
    view = json.loads(result.stdout)
    assert view["name"] == "Lisbon" and view["mentions"] == len(mentions_)
    assert [t["node_id"] for t in view["timeline"]]
    text = Memcli(config=cfg).ok("inspect", "entity", view["node_id"]).stdout
    assert "Lisbon" in text
    noun = "memory" if len(mentions_) == 1 else "memories"
    assert f"mentioned by {len(mentions_)} {noun}\n" in text


def test_inspect_unknown_entity_is_a_clear_error(
    stores: StoreCache, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    stores.copy("chat-no-llm", tmp_path / "memory.db")
    cfg = config_file(tmp_path, fake_server, llm=False)
    result = Memcli(config=cfg)("inspect", "entity", "Lisbn")
    assert result.exit_code != 0
    assert "memcli: error: no entity named 'Lisbn'" in result.stderr
    assert "Lisbon" in result.stderr and "fix:" in result.stderr
    # The fix names a command that lists entities, and that command works on this store.
    assert "memcli list --kind entity" in result.stderr
    listed = Memcli(config=cfg)("list", "--kind", "entity", "--limit", "0")
    assert listed.exit_code == 0 and "Lisbon" in listed.stdout


def test_llm_entities_have_descriptions_and_relations(
    stores: StoreCache, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    built = stores.copy("chat-scripted", tmp_path / "memory.db")
    stage = built.info["report"]["stages"]["entities"]
    assert stage["status"] == "done" and stage["failures"] == 0
    assert stage["dropped"] > 0  # the invented turn id of the scripted reply
    mem = opened(tmp_path, fake_server)
    entities = {e.text: e for e in mem.store.iter_nodes(mem.space, "entity")}
    ana = entities["Ana"]
    assert ana.props["description"].startswith("Ana said:") and ana.props["type"] == "person"
    relations = mem.store.edges_of([ana.id], ["RELATION"])
    assert relations and all(e.src == ana.id for e in relations)
    turns = {t for e in relations for p in e.props["predicates"] for t in p["turns"]}
    refs = {n.node_id for n in mem.store.iter_nodes(mem.space, "episode")}
    assert turns and turns <= refs  # the invented ep424242 never stored
    facts = [f.id for f in mem.store.iter_nodes(mem.space, "fact")]
    assert mem.store.edges_of(facts, ["MENTIONS"])  # facts linked to the entities they name
    view = mem.entity_view("ana")
    assert view["relations"] and view["description"] == ana.props["description"]


def test_off_schema_entity_replies_are_counted_failures(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    llm = ScriptedLLM()
    llm.always_bad = {"extract"}  # the request that carries facts and entities alike
    fake_server.responder = llm
    mem = opened(chat_store, fake_server)
    report = mem.consolidate(flush=True)
    stage, facts = report.stage("entities"), report.stage("facts")
    assert stage.failures == stage.pending > 0 and facts.failures > 0
    # An invalid reply is not cached: the entities stage asks again (and re-asks twice).
    assert stage.llm_calls == 3 * stage.failures
    assert llm.reasks["extract"] == 2 * (stage.failures + facts.failures)
    assert not mem.store.edges_of(
        [e.id for e in mem.store.iter_nodes(mem.space, "entity")], ["RELATION"]
    )
    assert mem.stats()["consolidation"]["pending"]["entities"] == stage.pending
