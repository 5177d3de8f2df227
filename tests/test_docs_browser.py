"""/docs and /redoc work offline: headless Chromium with every non-local request refused.

FastAPI's default pages load Swagger UI and ReDoc from a CDN, so without a network
they stay blank. The test blocks anything that is not the server under test and
checks that the REST operations are listed. Without /usr/bin/chromium it skips.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.helpers import running_server
from tests.test_explorer_browser import CHROMIUM, CHROMIUM_ARGS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="Debian's chromium is not installed at /usr/bin/chromium (apt-get install chromium)",
    ),
]


@pytest.fixture(scope="module")
def server(sample_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    copy = tmp_path_factory.mktemp("docs") / "store"
    shutil.copytree(sample_store, copy)
    with running_server(copy) as base:
        yield base


@pytest.fixture
def offline_page(server: str):  # noqa: ANN201
    sync_api = pytest.importorskip("playwright.sync_api")
    local = urlsplit(server).netloc
    problems: list[str] = []

    def only_local(route, request) -> None:  # noqa: ANN001
        if urlsplit(request.url).netloc == local or request.url.startswith("data:"):
            route.continue_()
        else:
            problems.append(f"request off the machine: {request.url}")
            route.abort()

    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 900})
            tab.set_default_timeout(60_000)
            tab.route("**/*", only_local)
            tab.on("pageerror", lambda exc: problems.append(f"uncaught: {exc}"))
            tab.on(
                "response",
                lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None,
            )
            yield tab
        finally:
            browser.close()
    assert not problems, "\n".join(problems)


def test_swagger_ui_lists_the_operations_offline(offline_page, server: str) -> None:  # noqa: ANN001
    offline_page.goto(server + "/docs")
    offline_page.wait_for_selector(".opblock-summary-path")
    paths = offline_page.eval_on_selector_all(
        ".opblock-summary-path", "els => els.map(e => e.getAttribute('data-path'))"
    )
    assert {"/papers", "/papers/{paper_id}", "/search", "/stats"} <= set(paths), paths


def test_redoc_lists_the_operations_offline(offline_page, server: str) -> None:  # noqa: ANN001
    offline_page.goto(server + "/redoc")
    offline_page.wait_for_selector("[data-section-id^='operation/']")
    text = offline_page.inner_text("body")
    assert "/papers" in text and "/search" in text
