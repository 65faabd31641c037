"""The README is a front page: short, its 60-second tour runs as written, its links resolve."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from memcli.config.schema import RetrievalConfig
from tests.cli_runner import REPO, Memcli
from tests.consolidate_helpers import config_file
from tests.fakeserver import FakeModelServer
from tests.project.test_quick_start_question import QUESTION, K

README = (REPO / "README.md").read_text(encoding="utf-8")
MAX_LINES = 250


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end > 0 else None]


def tour_commands() -> list[list[str]]:
    """The tour's command lines, comments dropped, as argument lists after `memcli`."""
    block = re.search(r"```bash\n(.*?)```", section("A 60-second tour"), re.S)
    assert block is not None
    lines = [line.split("  #")[0].strip() for line in block.group(1).splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith("memcli ")]


def test_the_tour_runs_as_written(
    tmp_path: Path, fake_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)  # the tour runs from the repository's directory
    cli = Memcli(config=config_file(tmp_path, fake_server, llm=False), db=tmp_path / "tour.db")
    commands = tour_commands()
    assert len(commands) >= 8
    for args in commands:
        args = [str(tmp_path / Path(a).name) if a.endswith(".jsonl.gz") else a for a in args]
        result = cli.ok(*args)
        if args[0] == "ingest":
            assert result.stdout.startswith("16 new episodes in 3 sessions")
        if args[:2] == ["list", "--grep"]:
            assert "find a hotel near" in result.stdout
        if args[0] == "list" and "--limit" in args:  # the comment shows the first line
            assert result.stdout.startswith("ep16  2024-03-23 11:41"), result.stdout


def test_the_readme_stays_a_front_page() -> None:
    assert len(README.splitlines()) <= MAX_LINES


def test_the_quick_start_names_what_exists() -> None:
    """The set-up command ingests the shipped example with the [dev] extra, and the test
    command is the one CI runs."""
    quick = section("Quick start")
    setup, tests = re.findall(r"```bash\n(.*?)```", quick, re.S)
    assert "pip install -e '.[dev]'" in setup and "ingest examples/chat.jsonl" in setup
    assert f'ask --context-only -k {K} "{QUESTION}"' in setup  # the question a test answers
    assert (REPO / "examples" / "chat.jsonl").is_file()
    assert tests.strip() in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def test_the_quick_start_says_what_ask_returns_and_how_to_cap_it() -> None:
    """Without -k a small store's every turn is packed (issue 37 item 8): the quick start
    gives the defaults as the code has them, and -k as the cap."""
    quick = " ".join(section("Quick start").split())
    defaults = RetrievalConfig()
    assert f"Without `-k`, `ask` lists the {defaults.k} best hits" in quick
    assert (
        f"packs the best {defaults.pool} into a context of about {defaults.word_budget} words"
        in quick
    )
    assert f"`-k {K}` is the cap" in quick


def test_the_size_of_the_quick_start_says_what_was_measured() -> None:
    """A figure with its measurement (issue 37 item 12: "about 500 MB" was 540 by du)."""
    quick = " ".join(section("Quick start").split())
    assert re.search(
        r"the `\.venv` it makes took \d+ MB by `du -sh \.venv`, with Python 3\.\d+", quick
    )


def test_every_link_of_the_readme_and_the_docs_resolves() -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://")):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            assert linked.exists(), (page.name, target)
            if anchor and linked.suffix == ".md":
                assert anchor in _anchors(linked.read_text(encoding="utf-8")), (page.name, target)


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors of a page's headings (lower case, punctuation dropped, - for spaces)."""
    headings = re.findall(r"^#+ (.+)$", markdown, re.M)
    return {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings}
