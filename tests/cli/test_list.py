"""`memcli list`: filters, order, paging, JSON records, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_runner import Memcli
from tests.consolidate_helpers import config_file
from tests.fakeserver import FakeModelServer
from tests.paths import EXAMPLE, REPO
from tests.reliability import write_config
from tests.stores import StoreCache

ROOT = REPO
CLAUDE = ROOT / "tests" / "data" / "readers" / "claude-conversations.json"


@pytest.fixture
def cli(tmp_path: Path, fake_server: FakeModelServer) -> Memcli:
    """The example chat and the Claude fixture ingested into tmp_path/memory.db."""
    cli = Memcli(config=config_file(tmp_path, fake_server, llm=False))
    cli.ok("ingest", EXAMPLE, CLAUDE)
    return cli


@pytest.fixture
def consolidated(stores: StoreCache, tmp_path: Path, fake_server: FakeModelServer) -> Memcli:
    """The consolidation chat after `consolidate --no-llm` (segments and concepts too)."""
    stores.copy("chat-no-llm", tmp_path / "memory.db")
    return Memcli(config=config_file(tmp_path, fake_server, llm=False))


def ids(cli: Memcli, *args: object) -> list[str]:
    return [r["node_id"] for r in cli.json("list", "--limit", 0, *args)]


def test_newest_first_one_line_each_with_ids_that_inspect_and_prune_take(cli: Memcli) -> None:
    result = cli.ok("list", "--limit", 3)
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["ep22", "ep21", "ep20"]
    assert lines[0] == "ep22  2024-06-05 19:02  untitled [c9d8e7f6]  user: Pebble it is."
    assert result.stderr == "1-3 of 22, newest first; next: --offset 3 (or --page 2)\n"
    everything = cli.json("list", "--limit", 0)
    stamps = [r["timestamp"] for r in everything]
    assert len(everything) == 22 and stamps == sorted(stamps, reverse=True)
    assert set(everything[0]) == {
        "node_id", "kind", "timestamp", "session", "speaker", "ref", "text", "belief", "status",
        "created_at",
    }  # fmt: skip
    node = cli.json("inspect", "node", everything[-1]["node_id"])[0]
    assert node["text"] == everything[-1]["text"]
    gone = cli.json("prune", "--node", everything[0]["node_id"], "--yes")[0]
    assert gone["removed"] == {"episode": 1}


def test_filters(cli: Memcli) -> None:
    assert ids(cli, "--session", "2024-03-02") == [f"ep{i}" for i in range(7, 0, -1)]
    assert ids(cli, "--session", "2024-03-0*", "--until", "2024-03-09T18:01") == [
        f"ep{i}" for i in range(7, 0, -1)
    ]
    assert len(ids(cli, "--session", "2024-03-02", "--session", "untitled*")) == 10
    assert ids(cli, "--source", CLAUDE) == [f"ep{i}" for i in range(22, 16, -1)]
    assert ids(cli, "--since", "2024-06-05", "--grep", "PEBBLE") == ["ep22", "ep21"]
    assert ids(cli, "--since", "2024-06-05T19:01:15Z", "--until", "2024-06-05T19:02") == ["ep21"]
    # A zone offset is honoured: 21:00 at +02:00 is 19:00 UTC.
    assert ids(cli, "--since", "2024-06-05T21:01:20+02:00") == ["ep22"]
    assert ids(cli, "--since", "100y", "--kind", "episode") == ids(cli)
    assert ids(cli, "--kind", "fact") == []


def test_grep_ignores_case_beyond_ascii(tmp_path: Path, fake_server: FakeModelServer) -> None:
    cli = Memcli(config=config_file(tmp_path, fake_server, llm=False))
    chat = tmp_path / "c.jsonl"
    chat.write_text('{"content": "Un ÉTÉ à Lisbonne"}\n{"content": "winter"}\n', encoding="utf-8")
    cli.ok("ingest", chat)
    assert [r["text"] for r in cli.json("list", "--grep", "été à")] == ["Un ÉTÉ à Lisbonne"]
    assert cli.json("list", "--grep", "100%") == []  # no LIKE wildcards


def test_grep_reads_past_a_nul_in_the_text(tmp_path: Path, fake_server: FakeModelServer) -> None:
    # A raw NUL byte makes a file binary, but the JSON escape \u0000 stores one in the text.
    cli = Memcli(config=config_file(tmp_path, fake_server, llm=False))
    chat = tmp_path / "c.jsonl"
    chat.write_text('{"content": "before\\u0000after the Secret"}\n{"content": "other"}\n')
    cli.ok("ingest", chat)
    for needle in ("before", "after", "SECRET"):
        found = cli.json("list", "--grep", needle)
        assert [r["text"] for r in found] == ["before\x00after the Secret"], needle


def test_paging(cli: Memcli) -> None:
    every = ids(cli)
    page = [r["node_id"] for r in cli.json("list", "--limit", 5, "--page", 3)]
    assert page == every[10:15]
    assert [r["node_id"] for r in cli.json("list", "--limit", 5, "--offset", 20)] == every[20:]
    last = cli("list", "--limit", 5, "--offset", 20)
    assert last.stderr == "21-22 of 22, newest first\n"
    beyond = cli("list", "--page", 9)
    assert (beyond.exit_code, beyond.stdout) == (0, "")
    assert beyond.stderr == "nothing from 161 on: 22 memories match\n"


def test_kinds_of_a_consolidated_store(consolidated: Memcli) -> None:
    stats = consolidated.json("inspect")[0]["nodes"]
    for kind in ("segment", "concept", "episode"):
        listed = consolidated.json("list", "--limit", 0, "--kind", kind)
        assert len(listed) == stats[kind] and {r["kind"] for r in listed} == {kind}
    both = consolidated.json("list", "--limit", 0, "--kind", "segment", "--kind", "concept")
    assert len(both) == stats["segment"] + stats["concept"]
    assert len(consolidated.json("list", "--limit", 0)) == sum(stats.values())


def test_memories_come_before_what_consolidation_made_to_index_them(
    consolidated: Memcli,
) -> None:
    kinds = [r["kind"] for r in consolidated.json("list", "--limit", 0)]
    organisers = {"segment", "concept", "entity"}
    first = next(i for i, kind in enumerate(kinds) if kind in organisers)
    assert first > 0 and kinds[0] == "episode"
    assert all(kind in organisers for kind in kinds[first:]), "no memory after an organiser"
    page = consolidated.json("list", "--limit", 3)
    assert [r["kind"] for r in page] == ["episode"] * 3, "the first page is the conversation"


def test_empty_results_are_success_with_a_hint(cli: Memcli) -> None:
    result = cli("list", "--session", "2024-03-0")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr.splitlines() == [
        "no memories match",
        "no session matches '2024-03-0'; sessions include: 2024-03-02, 2024-03-09, 2024-03-23,"
        " Garden watering schedule [3b1f7c52], untitled [c9d8e7f6]",
    ]
    assert cli("-q", "list", "--grep", "nothing like this").stderr == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kind", "facts"], "unknown --kind 'facts' (did you mean 'fact'?)"),
        (["--page", "0"], "--page counts from 1, got 0"),
        (["--page", "2", "--offset", "3"], "--page and --offset both say where to start"),
        (["--page", "2", "--limit", "0"], "--page needs a page size"),
        (["--limit", "-1"], "--limit and --offset must be 0 or more"),
        (["--since", "yesterday"], "--since expects an ISO date such as 2024-03-01"),
        (["--until", "5m"], "--until expects an ISO date"),
        (["--grep", " "], "--grep needs some text"),
        (["--limit", "many"], "invalid value for '--limit'"),
    ],
)
def test_bad_options_are_usage_errors(cli: Memcli, args: list[str], message: str) -> None:
    result = cli("list", *args)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith("memcli: error: ") and message in result.stderr
    assert result.stdout == ""


def test_unknown_source_and_missing_store(cli: Memcli, tmp_path: Path) -> None:
    result = cli("list", "--source", "other.jsonl")
    assert result.exit_code == 4
    assert "--source 'other.jsonl' matches no source" in result.stderr and "fix:" in result.stderr
    missing = Memcli(db=tmp_path / "none.db")("list")
    assert missing.exit_code == 4 and "no memory store at" in missing.stderr
    assert not (tmp_path / "none.db").exists()


def test_help_has_examples() -> None:
    result = Memcli()("list", "--help")
    assert result.exit_code == 0
    assert "memcli list --kind fact --grep" in result.stdout
    assert "--page" in result.stdout and "--since" in result.stdout


# `list --json`: the records on stdout, and where the page sits (total, paging, or that no
# memory matches) as one JSON object on stderr instead of a line of text.


def test_paging_and_no_match_are_json(tmp_path: Path) -> None:
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    cli.ok("ingest", EXAMPLE)
    page = cli.ok("--json", "list", "--limit", "5", "--offset", "5")
    records = [json.loads(line) for line in page.stdout.splitlines()]
    assert len(records) == 5 and all("node_id" in r for r in records)
    note = json.loads(page.stderr)
    assert (note["total"], note["offset"], note["limit"], note["count"]) == (16, 5, 5, 5)
    assert note["next_offset"] == 10 and note["note"].startswith("6-10 of 16")
    empty = cli.ok("--json", "list", "--grep", "no such words anywhere")
    assert empty.stdout == ""
    nothing = json.loads(empty.stderr)
    assert (nothing["total"], nothing["count"], nothing["note"]) == (0, 0, "no memories match")
    unknown = json.loads(cli.ok("--json", "list", "--session", "nope").stderr)
    assert unknown["unknown_sessions"] == ["nope"] and "sessions include" in unknown["note"]
    assert cli.ok("--json", "-q", "list", "--grep", "zzz").stderr == ""
    text = cli.ok("list", "--grep", "no such words anywhere")
    assert text.stderr.strip() == "no memories match"
