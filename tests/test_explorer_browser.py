"""The explorer page, end to end: the real server, the real page, headless Chromium.

Debian's ``chromium`` (``.ci/run`` installs it) is driven by Playwright with that
executable: no browser is downloaded. Without /usr/bin/chromium the test skips.

The test fails on any JavaScript error (``console.error`` or an uncaught
exception), on a failed request, and on an empty graph. Its screenshot goes to
``test-artifacts/explorer.png`` (git-ignored).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyoxigraph import NamedNode

from kg.read.graphview import run, search
from kg.store.embedded import open_store
from tests.helpers import REPO, running_server

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="Debian's chromium is not installed at /usr/bin/chromium (apt-get install chromium)",
    ),
]


@pytest.fixture(scope="module")
def unlearning_papers(sample_store: Path) -> tuple[str, set[str]]:
    """The entity the search box finds first for "unlearning", and its papers, by SPARQL."""
    store = open_store(sample_store, read_only=True)
    try:
        entity = next(r["iri"] for r in search(store, "unlearning") if r["type"] != "Paper")
        papers = {r["paper"] for r in run(store, "entity-papers", node=NamedNode(entity))}
    finally:
        store.close()
    return entity, papers


@pytest.fixture(scope="module")
def server(sample_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    copy = tmp_path_factory.mktemp("explorer") / "store"
    shutil.copytree(sample_store, copy)
    with running_server(copy) as base:
        yield base


@pytest.fixture
def page(server: str):  # noqa: ANN201
    sync_api = pytest.importorskip("playwright.sync_api")
    errors: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": 1400, "height": 860})
            tab.set_default_timeout(60_000)
            tab.on(
                "console",
                lambda m: (
                    errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None
                ),
            )
            tab.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
            tab.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
            tab.on(
                "response",
                lambda r: errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None,
            )
            tab.errors = errors  # type: ignore[attr-defined]
            yield tab
        finally:
            browser.close()
    assert not errors, "JavaScript errors on the page:\n" + "\n".join(errors)


def _graph_ready(page, focus: bool = True) -> None:  # noqa: ANN001
    condition = "document.querySelector('#graph').dataset.state === 'ready'"
    if focus:
        condition += " && window.kgExplorer.state.focus !== null"
    page.wait_for_function(condition)


def _node_ids(page) -> set[str]:  # noqa: ANN001
    return set(page.evaluate("window.kgExplorer.cy.nodes().map(n => n.id())"))


def _click_node(page, iri: str, *, double: bool = False) -> None:  # noqa: ANN001
    """A real mouse click at the node's place on the canvas."""
    point = page.evaluate(
        """(iri) => {
            const node = window.kgExplorer.cy.getElementById(iri);
            const p = node.renderedPosition();
            const box = document.getElementById('graph').getBoundingClientRect();
            return {x: box.left + p.x, y: box.top + p.y};
        }""",
        iri,
    )
    if double:
        page.mouse.dblclick(point["x"], point["y"])
    else:
        page.mouse.click(point["x"], point["y"])


def test_search_unlearning_draw_click_panel(page, server: str, unlearning_papers) -> None:  # noqa: ANN001
    entity, papers = unlearning_papers
    assert len(papers) == 3, f"expected the three unlearning papers, SPARQL finds {papers}"

    page.goto(server + "/")
    _graph_ready(page, focus=False)  # the overview draws first
    assert page.evaluate("window.kgExplorer.cy.nodes().length") > 0, "the overview graph is empty"

    page.fill("#search", "unlearning")
    page.wait_for_selector("#search-results li[data-iri]")
    first = page.get_attribute("#search-results li[data-iri]", "data-iri")
    assert first == entity
    page.keyboard.press("Enter")
    _graph_ready(page)

    drawn = _node_ids(page)
    assert drawn, "the graph is empty"
    assert entity in drawn
    assert papers <= drawn, f"missing unlearning papers: {papers - drawn}"
    assert page.evaluate("window.kgExplorer.cy.edges().length") >= 3
    # Every drawn node is visible inside the canvas (the layout ran and fitted).
    assert page.evaluate(
        """() => {
            const cy = window.kgExplorer.cy, w = cy.width(), h = cy.height();
            return cy.nodes().every(n => {
                const p = n.renderedPosition();
                return p.x >= 0 && p.y >= 0 && p.x <= w && p.y <= h;
            });
        }"""
    )

    # Click one of the papers: its side panel shows its abstract, entities and claims.
    paper = sorted(papers)[0]
    _click_node(page, paper)
    page.wait_for_function(
        "(iri) => document.querySelector('#panel .iri')?.textContent === iri", arg=paper
    )
    assert page.is_visible("#panel")
    assert page.inner_text("#panel .badge") == "Paper"
    assert page.inner_text("#panel-label").strip()
    panel = page.inner_text("#panel-body")
    assert "ABSTRACT" in panel.upper() and "ENTITIES" in panel.upper()
    label = page.evaluate("(iri) => window.kgExplorer.cy.getElementById(iri).data('label')", paper)
    assert label.rstrip("…")[:20] in page.inner_text("#panel-body")

    # Downloads and the SPARQL view are linked for this very view.
    hrefs = page.eval_on_selector_all("#downloads a", "links => links.map(a => a.href)")
    assert len(hrefs) == 6 and all("focus=" in h and "format=" in h for h in hrefs)
    assert "#query=" in page.get_attribute("#link-sparql", "href")

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "explorer.png"))

    # "View as SPARQL" opens the editor with the neighbourhood query bound to the focus.
    page.goto(server + page.get_attribute("#link-sparql", "href"))
    page.wait_for_function(
        "(iri) => (document.getElementById('query')?.value || '').includes('<' + iri + '>')",
        arg=entity,
    )
    assert "VALUES ?focus" in page.input_value("#query")


def test_panel_of_entity_expand_and_filter(page, server: str, unlearning_papers) -> None:  # noqa: ANN001
    entity, papers = unlearning_papers
    page.goto(f"{server}/?focus={entity}&depth=1")
    _graph_ready(page)
    assert _node_ids(page) == {entity} | papers
    # The legend is GET /schema's: every type, in order, with its colour.
    from kg import schema

    legend = page.eval_on_selector_all("#legend input", "inputs => inputs.map(i => i.value)")
    assert legend == ["Paper", *(k.name for k in schema.ENTITY_TYPES)]
    swatch = page.get_attribute(f"#legend .swatch.{schema.ENTITY_TYPES[0].name}", "style")
    assert schema.ENTITY_TYPES[0].colour in (swatch or "")

    _click_node(page, entity)
    page.wait_for_selector("#panel .paper")
    assert len(page.query_selector_all("#panel .paper")) == 3

    # Double-click a paper: its entities join the drawing.
    before = _node_ids(page)
    _click_node(page, sorted(papers)[0], double=True)
    page.wait_for_function(f"window.kgExplorer.cy.nodes().length > {len(before)}")
    assert before < _node_ids(page)

    # Unticking Paper in the legend redraws without papers.
    page.uncheck("#legend input[value=Paper]")
    page.wait_for_function(
        "document.querySelector('#graph').dataset.state === 'ready'"
        " && window.kgExplorer.cy.nodes('[type = \"Paper\"]').length === 0"
    )
    assert entity in _node_ids(page)
