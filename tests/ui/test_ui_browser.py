"""`memcli ui` in a real browser: Debian's headless Chromium, driven by selenium, searches,
opens a node, follows an edge of the drawn neighbourhood and opens the timeline, against
a real `memcli ui` process (the `browser` fixture is in conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.ui_helpers import FIRST_LINE, build, served

pytestmark = pytest.mark.browser


def _wait(driver: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, 30).until(
        ready.presence_of_element_located((By.CSS_SELECTOR, css))
    )


def test_search_open_a_node_follow_an_edge_open_the_timeline(tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    built = build(tmp_path)
    with served(built["db"], tmp_path) as (line, _):
        match = FIRST_LINE.match(line)
        assert match, line
        base = f"http://127.0.0.1:{match[1]}"
        browser.get(line)  # the printed address: the token becomes a cookie
        _wait(browser, "table.facts")
        assert browser.current_url == f"{base}/" and "Overview" in browser.title

        box = browser.find_element(By.CSS_SELECTOR, "header input[name=q]")
        box.send_keys("the old bridge in Ribeira", Keys.ENTER)
        first = _wait(browser, "li.hit")
        assert "/search?q=" in browser.current_url
        assert "Ribeira, close to the old bridge." in first.text
        assert first.find_elements(By.CSS_SELECTOR, "ul.why li")  # its score by signal

        first.find_element(By.CSS_SELECTOR, "a.nid").click()
        _wait(browser, "svg.graph")
        here = browser.current_url.rsplit("/", 1)[1]
        assert "/node/" in browser.current_url
        neighbour = next(
            a for a in browser.find_elements(By.CSS_SELECTOR, "svg.graph a.n")
            if a.get_attribute("data-node") != here
        )  # fmt: skip
        target = neighbour.get_attribute("data-node")
        neighbour.click()  # follow an edge of the drawing
        _wait(browser, f'h1 a[href="/node/{target}"]')
        assert browser.current_url == f"{base}/node/{target}"

        browser.find_element(By.LINK_TEXT, "Timeline").click()
        _wait(browser, "table.timeline")
        browser.find_element(By.CSS_SELECTOR, "a.session").click()
        rows = _wait(browser, "table.turns")
        assert "I moved to Porto in March" in rows.text


def test_without_the_token_the_browser_gets_nothing(tmp_path: Path, browser: Any) -> None:
    built = build(tmp_path)
    with served(built["db"], tmp_path) as (line, _):
        base = line.split("/?token=")[0]
        browser.get(f"{base}/search?q=Porto")
        assert "Porto in March" not in browser.page_source
        assert "needs the address" in browser.page_source
