"""The read model, directly and through the app in-process (httpx's ASGI
transport, the app's own lifespan): the same JSON either way, 422s for values
the read model refuses, and no spaCy in the web process."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from kg.read import ReadError
from kg.read.entities import entity_detail
from kg.read.papers import list_claims, paper_detail, papers_page
from kg.read.resolve import focus_candidates, resolve_entity
from kg.store.embedded import open_reader
from service.app import create_app
from service.settings import Settings


@pytest.fixture(scope="module")
def store(tiny_store: Path):  # noqa: ANN201
    graph = open_reader(tiny_store)
    yield graph
    graph.close()


def test_one_resolver_for_keys_labels_and_canonical_forms(store) -> None:  # noqa: ANN001
    iri = "https://w3id.org/mlkg/id/task/machine-unlearning"
    for value in ("machine-unlearning", "Machine Unlearning", "task/machine-unlearning", iri):
        assert resolve_entity(store, value, type_name="task", parameter="task") == iri
    assert resolve_entity(store, "no such thing", type_name=None, parameter="x") is None
    with pytest.raises(ReadError) as caught:
        resolve_entity(store, "  ", type_name="task", parameter="task")
    assert caught.value.parameter == "task"
    assert iri in focus_candidates("Machine Unlearning")


def test_views(store) -> None:  # noqa: ANN001
    page = papers_page(store, {"task": "machine unlearning"}, None, 10, 0)
    assert page["total"] == 2
    paper = paper_detail(store, "p1")
    assert paper is not None
    assert [e["label"] for e in paper["proposed_methods"]] == ["FastForget"]
    entity = entity_detail(store, "dataset", "cifar-10")
    assert entity is not None and entity["paper_count"] == 2
    total, filters, items = list_claims(store, dataset="CIFAR-10", min_value=1)
    assert total == 1 and filters["dataset"].endswith("/dataset/cifar-10")
    assert items[0]["values"][0]["number"] == 3.0


def _get_all(app, urls: list[str]) -> list[httpx.Response]:  # noqa: ANN001
    async def run() -> list[httpx.Response]:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://kg") as client:
                return [await client.get(url) for url in urls]

    return asyncio.run(run())


def test_rest_is_thin_http_over_the_read_model(tiny_store: Path, store) -> None:  # noqa: ANN001
    app = create_app(Settings(store=str(tiny_store), query_workers=1, log_level="warning"))
    paper, listed, bad, sparql = _get_all(
        app,
        [
            "/papers/p1",
            "/tasks",
            "/claims?min_value=5&max_value=1",
            "/sparql?query=ASK%20%7B%20%3Fs%20%3Fp%20%3Fo%20%7D",
        ],
    )
    assert paper.json() == paper_detail(store, "p1")
    assert [i["key"] for i in listed.json()["items"]] == ["machine-unlearning"]
    assert bad.status_code == 422
    assert bad.headers["content-type"].startswith("application/problem+json")
    assert bad.json()["errors"][0]["parameter"] == "min_value"
    assert sparql.status_code == 200  # answered by the query pool's worker process


def test_the_web_process_does_not_load_spacy(tiny_store: Path) -> None:
    script = (
        "import sys, asyncio, httpx\n"
        "from service.app import create_app\n"
        "from service.settings import Settings\n"
        f"app = create_app(Settings(store={str(tiny_store)!r}, query_workers=1))\n"
        "async def main():\n"
        "    async with app.router.lifespan_context(app):\n"
        "        t = httpx.ASGITransport(app=app)\n"
        "        async with httpx.AsyncClient(transport=t, base_url='http://kg') as c:\n"
        "            r = await c.get('/papers', params={'task': 'Machine Unlearning'})\n"
        "            assert r.json()['total'] == 2, r.text\n"
        "asyncio.run(main())\n"
        "print('spacy' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"
