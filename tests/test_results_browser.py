"""The leaderboards page end to end: real server, real page, headless Chromium.

Skips without Debian's chromium (``/usr/bin/chromium``), like the explorer test;
fails on any JavaScript error, failed request or HTTP error.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kg.model import Record
from tests.helpers import running_server
from tests.test_explorer_browser import CHROMIUM, CHROMIUM_ARGS
from tests.test_results_api import ABSTRACTS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed"),
]
PAGE = "/static/explorer/results.html"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, extractor) -> Iterator[str]:  # noqa: ANN001
    from kg.ingest import ingest_items
    from kg.store.embedded import open_store

    path: Path = tmp_path_factory.mktemp("results-browser") / "store"
    store = open_store(path)
    ingest_items([Record(k, t) for k, t in ABSTRACTS.items()], store, extractor=extractor)
    store.close()
    with running_server(path) as base:
        yield base


@pytest.fixture
def page(server: str):  # noqa: ANN201
    sync_api = pytest.importorskip("playwright.sync_api")
    errors: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": 1300, "height": 900})
            tab.set_default_timeout(60_000)
            tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            tab.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
            tab.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
            tab.on(
                "response",
                lambda r: errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None,
            )
            yield tab
        finally:
            browser.close()
    assert not errors, "errors on the page:\n" + "\n".join(errors)


def _ready(page) -> None:  # noqa: ANN001
    page.wait_for_function("document.body.dataset.state === 'ready'")


def test_leaderboards_to_a_board_to_its_sentence(page, server: str) -> None:  # noqa: ANN001
    page.goto(server + PAGE + "?min_results=3")
    _ready(page)
    assert len(page.query_selector_all("#leaderboards tr")) == 4  # header + three boards
    page.click("#leaderboards a:text('ImageNet')")
    _ready(page)
    rows = page.query_selector_all("#leaderboard tr")[1:]
    assert [r.query_selector("td.num:nth-child(2)").inner_text() for r in rows] == [
        "86.1%",
        "84.7%",
        "79.3%",
    ]
    assert page.inner_text("#leaderboard tr:nth-child(2) mark") == "86.1%"
    href = page.get_attribute("#leaderboard tr:nth-child(2) a.sentence-link", "href")
    assert href.startswith("/id/paper/beta#:~:text=")
    page.click("#leaderboard tr:nth-child(2) a.sentence-link")
    page.wait_for_load_state()
    assert "86.1% top-1 accuracy on ImageNet" in page.inner_text("body")


def test_compare_related_and_task_tree(page, server: str) -> None:  # noqa: ANN001
    page.goto(server + PAGE + "?compare=alpha,delta")
    _ready(page)
    assert len(page.query_selector_all("#compare tr:first-child th a")) == 2
    assert "84.7%" in page.inner_text("#compare")

    page.goto(server + PAGE + "?related=alpha")
    _ready(page)
    assert "ImageNet" in page.inner_text("#related")

    page.goto(server + PAGE + "?task=widget-segmentation")
    _ready(page)
    assert page.inner_text("#task-tree li.narrower a") == "multi-view widget segmentation"
    page.click("#task-tree li.narrower button.toggle")
    page.wait_for_selector("#task-tree li.narrower ul")
    assert "no narrower task" in page.inner_text("#task-tree li.narrower ul")
