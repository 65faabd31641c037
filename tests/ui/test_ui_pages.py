"""Every page of `memcli ui` over a small store: what it shows, escaping, bad input."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.ui_helpers import MARKUP, build, page_client, signed_in


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Any:
    built = build(tmp_path_factory.mktemp("ui"))
    with page_client(built["db"]) as client:
        signed_in(client)
        client.built = built
        yield client


def test_search_shows_the_ranked_hits_with_their_score_by_signal(site: Any) -> None:
    page = site.get("/search", params={"q": "Where does Ana live now, Porto?"})
    assert page.status_code == 200
    hits = re.findall(
        r'<li class="hit" id="hit-\d+">(.*?)</li>\s*(?=<li class="hit"|</ol>)', page.text
    )
    assert hits, page.text
    assert "I moved to Porto in March" in page.text
    assert 'class="whybar"' in hits[0] and "full-text" in hits[0]
    assert "packed" in hits[0]  # the hits as they would be packed
    assert "The packed context" in page.text
    assert 'value="hybrid" selected' in page.text


def test_a_strategy_that_does_not_explain_shows_the_score_alone(site: Any) -> None:
    page = site.get("/search", params={"q": "Porto", "strategy": "lexical"})
    assert page.status_code == 200
    assert "does not break its scores down" in page.text
    assert "whybar" not in page.text and 'class="score"' in page.text


def test_search_without_a_question_shows_the_form(site: Any) -> None:
    page = site.get("/search")
    assert page.status_code == 200 and 'name="q"' in page.text and "hit-1" not in page.text


def test_stored_markup_is_shown_as_text_never_run(site: Any) -> None:
    built = site.built
    page = site.get(f"/node/{built['turns'][4]}")
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page.text
    assert MARKUP not in page.text and "<b>bold" not in page.text
    search = site.get("/search", params={"q": "alert bold"})
    assert "&lt;script&gt;" in search.text and "<script>alert" not in search.text


def test_timeline_lists_sessions_and_a_session_its_turns(site: Any) -> None:
    timeline = site.get("/timeline")
    assert timeline.status_code == 200
    assert 'href="/session?name=trip"' in timeline.text and "2024-03-01 10:00" in timeline.text
    session = site.get("/session", params={"name": "trip"})
    assert session.status_code == 200
    for turn in site.built["turns"]:
        assert f'href="/node/{turn}"' in session.text
    order = [session.text.index(t) for t in ("I moved to Porto", "Which part", "Ribeira")]
    assert order == sorted(order)


def test_a_turn_shows_its_neighbours_what_was_derived_and_its_file(site: Any) -> None:
    built = site.built
    page = site.get(f"/node/{built['turns'][0]}")
    assert page.status_code == 200
    assert "turn after" in page.text and "derived from this" in page.text
    assert f'href="/node/{built["new"]}"' in page.text  # the fact derived from it
    assert f'href="/node/{built["topic"]}"' in page.text and "in topic" in page.text
    assert str(built["chat"]) in page.text  # its source file
    svg = re.search(r'<svg class="graph".*?</svg>', page.text, re.S)
    assert svg is not None
    links = set(re.findall(r'<a href="/node/(\w+)" class="n ', svg.group(0)))
    assert {built["turns"][0], built["turns"][1], built["new"], built["topic"]} <= links


def test_a_superseded_fact_says_so_and_by_what(site: Any) -> None:
    built = site.built
    old = site.get(f"/node/{built['old']}")
    assert "superseded</span> by" in old.text and f'href="/node/{built["new"]}"' in old.text
    assert "until 2024-03-01" in old.text
    new = site.get(f"/node/{built['new']}")
    assert 'class="badge ok">current' in new.text and "replaces" in new.text


def test_the_node_page_previews_forgetting_and_deletes_nothing(site: Any) -> None:
    built = site.built
    page = site.get(f"/node/{built['turns'][0]}")
    assert f"memcli prune --node {built['turns'][0]}</code> would remove" in page.text
    assert "1 episode" in page.text and "never deletes" in page.text
    again = site.get(f"/node/{built['turns'][0]}")  # still there: it was a preview
    assert again.status_code == 200


def test_entities_list_and_an_entity_with_its_fact_chain(site: Any) -> None:
    built = site.built
    listing = site.get("/entities")
    assert f'href="/entity/{built["entity"]}"' in listing.text
    page = site.get(f"/entity/{built['entity']}")
    assert page.status_code == 200
    assert "Fact chain" in page.text and "Mentions over time" in page.text
    chain = page.text[page.text.index("Fact chain") :]
    assert chain.index("Ana lives in Lisbon") < chain.index("Ana lives in Porto")
    assert "superseded</span> until 2024-03-01" in chain
    assert 'class="months"' in page.text


def test_overview_list_and_runs(site: Any) -> None:
    overview = site.get("/")
    assert "episode" in overview.text and "Read-only" in overview.text
    facts = site.get("/list", params={"kind": "fact"})
    assert "Ana lives in Porto" in facts.text and "Ribeira" not in facts.text
    runs = site.get("/runs")
    assert runs.status_code == 200 and "No consolidation has run" in runs.text


@pytest.mark.parametrize(
    ("path", "status", "words"),
    [
        ("/node/ep999999", 404, "no node"),
        ("/node/nonsense", 404, "nonsense"),
        ("/entity/nobody", 404, "no entity named"),
        ("/session?name=nope", 404, "no session"),
        ("/search?q=x&k=abc", 400, "k must be"),
        ("/search?q=x&k=0", 400, "k must be"),
        ("/search?q=x&strategy=nope", 400, "unknown retrieval strategy"),
        ("/timeline?offset=-1", 400, "offset"),
        ("/static/secret.txt", 404, "not found"),
    ],
)
def test_bad_input_is_a_clear_page_not_a_crash(
    site: Any, path: str, status: int, words: str
) -> None:
    page = site.get(path)
    assert page.status_code == status, page.text
    assert words in page.text


def test_static_files_ship_with_the_package(site: Any) -> None:
    css = site.get("/static/ui.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert site.get("/static/ui.js").headers["content-type"].startswith("text/javascript")


def test_runs_page_lists_stages_with_counts_and_failures(tmp_path: Path) -> None:
    built = build(tmp_path)
    from memcli.memory import Memory
    from tests.ui_helpers import config

    with Memory(config(built["db"])) as mem:
        mem.consolidate(flush=True, no_llm=True)
    with page_client(built["db"]) as client:
        page = signed_in(client).get("/runs")
    assert page.status_code == 200
    for stage in ("segment", "concepts", "entities"):
        assert f"<td>{stage}</td>" in page.text
    assert "prompt tokens" in page.text and "failures" in page.text
