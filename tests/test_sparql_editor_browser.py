"""The SPARQL editor page in headless Chromium against the real server: prefixes
prefilled, examples from queries/*.rq, results drawn as a table, no request
leaves the server (no CDN), no JavaScript error. Skips without /usr/bin/chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import running_server

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="no Debian chromium at /usr/bin/chromium (apt-get install chromium)",
    ),
]


@pytest.fixture(scope="module")
def base(sample_store: Path) -> Iterator[str]:
    with running_server(sample_store) as url:
        yield url


def test_editor_runs_queries_and_draws_a_table(base: str) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    errors: list[str] = []
    foreign: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page()
            tab.set_default_timeout(30_000)
            tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            tab.on("pageerror", lambda exc: errors.append(str(exc)))
            tab.on("request", lambda r: None if r.url.startswith(base) else foreign.append(r.url))
            tab.goto(base + "/sparql")
            tab.wait_for_function("document.querySelectorAll('#examples option').length > 1")
            assert "PREFIX kg: <https://w3id.org/mlkg/ontology#>" in tab.input_value("#query")
            tab.click("#run")
            tab.wait_for_selector("#results table tbody tr")
            assert tab.locator("#results table tbody tr").count() == 20
            assert "rows" in tab.inner_text("#status")
            # Result IRIs link to this server's /id/ pages, not to w3id.org.
            hrefs = tab.eval_on_selector_all("#results td.uri a", "as => as.map(a => a.href)")
            assert hrefs and all(h.startswith(base + "/id/paper/") for h in hrefs), hrefs[:3]
            # An example from queries/examples/: the proposed methods, by label.
            tab.select_option("#examples", "proposed-methods")
            assert "proposesMethod" in tab.input_value("#query")
            tab.click("#run")
            tab.wait_for_function(
                "!document.querySelector('#run').disabled "
                "&& document.querySelector('#status').textContent !== 'Running…'"
            )
            assert "error" not in (tab.get_attribute("#status", "class") or "")
            first = tab.locator("#results td.uri a").first
            assert first.get_attribute("href").startswith("/id/paper/")
            first.click()
            tab.wait_for_url(base + "/id/paper/**")
            assert tab.locator("h1").count() == 1
            tab.goto(base + "/sparql")
            tab.wait_for_function("document.querySelectorAll('#examples option').length > 1")
            # A broken query shows the problem's detail.
            tab.fill("#query", "SELECT * WHERE {")
            tab.click("#run")
            tab.wait_for_selector("#status.error")
            assert "400" in tab.inner_text("#status")
        finally:
            browser.close()
    assert not [e for e in errors if "400" not in e], errors
    assert foreign == [], f"the page fetched from elsewhere: {foreign}"
