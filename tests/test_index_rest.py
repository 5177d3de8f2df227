"""REST answers from the index (kg.store.index) equal the scanning named queries'.

The same sample store is served twice: once with its index, once with
``KG_INDEX`` pointing at a file that does not exist (so every read scans the
graph, as before the index). Lists whose order has ties are compared as sets
over pages large enough to hold everything."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings


def _client(store: Path) -> TestClient:
    return TestClient(create_app(Settings(store=str(store), query_workers=1, log_level="warning")))


@pytest.fixture(scope="module")
def both(sample_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    assert Path(f"{sample_store}.index.sqlite").exists(), "ingest writes the index"
    with _client(sample_store) as indexed:
        mp = pytest.MonkeyPatch()
        mp.setenv("KG_INDEX", str(tmp_path_factory.mktemp("none") / "missing.sqlite"))
        try:
            with _client(sample_store) as scanning:
                yield indexed, scanning
        finally:
            mp.undo()


def _get(client: TestClient, url: str) -> dict:
    response = client.get(url)
    assert response.status_code == 200, (url, response.text)
    return response.json()


def _counted(items: list[dict]) -> set[tuple]:
    return {(i["iri"], i.get("papers")) for i in items}


def test_the_two_services_differ_in_their_source(both: tuple) -> None:
    indexed, scanning = both
    assert indexed.app.state.store.search_index().usable
    assert not scanning.app.state.store.search_index().usable


def test_paper_details_alike(both: tuple) -> None:
    indexed, scanning = both
    ids = [p["id"] for p in _get(scanning, "/papers?limit=200")["items"]]
    assert len(ids) > 30
    claims = 0
    for paper_id in ids:
        detail = _get(indexed, f"/papers/{paper_id}")
        assert detail == _get(scanning, f"/papers/{paper_id}"), paper_id
        claims += len(detail["claims"])
    assert claims > 50, "the claims come from the index's stored JSON"


def test_stats_and_entity_lists(both: tuple) -> None:
    indexed, scanning = both
    a, b = _get(indexed, "/stats?top=100"), _get(scanning, "/stats?top=100")
    assert a["counts"] == b["counts"]
    for top in ("top_tasks", "top_methods"):
        assert [i["papers"] for i in a[top]] == [i["papers"] for i in b[top]]
    for path in (
        "/tasks",
        "/methods",
        "/datasets",
        "/metrics",
        "/methods?prefix=TR",
        "/tasks?prefix=un",
    ):
        sep = "&" if "?" in path else "?"
        a, b = _get(indexed, f"{path}{sep}limit=200"), _get(scanning, f"{path}{sep}limit=200")
        assert a["total"] == b["total"], path
        assert _counted(a["items"]) == _counted(b["items"]), path
        assert [i["papers"] for i in a["items"]] == [i["papers"] for i in b["items"]], path
        if "prefix" in path:
            # Both order ties by the first name under the prefix, then IRI.
            assert [i["iri"] for i in a["items"]] == [i["iri"] for i in b["items"]], path


def test_entity_detail_and_paper_filters(both: tuple) -> None:
    indexed, scanning = both
    for item in (
        _get(scanning, "/tasks?limit=5")["items"] + _get(scanning, "/methods?limit=5")["items"]
    ):
        url = item["href"] + "?related_limit=1000"
        a, b = _get(indexed, url), _get(scanning, url)
        assert a["paper_count"] == b["paper_count"]
        assert {p["id"]: sorted(p["relations"]) for p in a["papers"]} == {
            p["id"]: sorted(p["relations"]) for p in b["papers"]
        }
        assert {k: _counted(v) for k, v in a["related"].items()} == {
            k: _counted(v) for k, v in b["related"].items()
        }
        kind = item["type"]
        url = f"/papers?{kind}={item['key']}&limit=200"
        a, b = _get(indexed, url), _get(scanning, url)
        assert (a["total"], a["filters"]) == (b["total"], b["filters"])
        assert {p["id"] for p in a["items"]} == {p["id"] for p in b["items"]}


def test_claims(both: tuple) -> None:
    indexed, scanning = both
    for query in (
        "",
        "kind=performance",
        "min_value=0&max_value=100",
        "metric=accuracy",
        "kind=contribution&min_value=1",
    ):
        url = f"/claims?{query}&limit=200"
        a, b = _get(indexed, url), _get(scanning, url)
        assert a["total"] == b["total"], query
        assert {c["iri"]: c for c in a["items"]} == {c["iri"]: c for c in b["items"]}, query


def test_search_finds_words_in_abstracts(both: tuple) -> None:
    indexed, scanning = both
    a, b = _get(indexed, "/search?q=learn&limit=200"), _get(scanning, "/search?q=learn&limit=200")
    assert {e["iri"] for e in a["entities"]} == {e["iri"] for e in b["entities"]}
    assert a["papers"], "stemmed full-text search finds 'learning' for 'learn'"
    hits = _get(indexed, "/papers?q=unlearning&limit=200")
    assert hits["total"] > 0 and hits["items"]


def test_posted_and_deleted_papers_follow_in_search(
    store_copy: Path, extractor: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KG_INDEX", raising=False)  # the module's scanning service sets it
    settings = Settings(
        store=str(store_copy), update_token="t0ken-for-index", query_workers=1, log_level="warning"
    )
    auth = {"Authorization": "Bearer t0ken-for-index"}
    app = create_app(settings)
    with TestClient(app) as client:
        app.state.extractor = extractor
        before = _get(client, "/stats")["counts"]["papers"]
        record = {
            "id": "zz-index",
            "title": "Quokka sampling",
            "abstract": "We study quokkas for image classification on CIFAR-10.",
        }
        posted = client.post("/papers", json=record, headers=auth)
        assert posted.status_code == 201
        first = posted.json()["results"][0]["id"]  # the abstract's hash; "zz-index" is kept
        assert client.app.state.store.search_index().usable
        assert [p["id"] for p in _get(client, "/papers?q=quokka")["items"]] == [first]
        assert [p["id"] for p in _get(client, "/search?q=quokkas")["papers"]] == [first]
        assert _get(client, "/stats")["counts"]["papers"] == before + 1
        record.update(
            title="Marsupials",
            abstract="We study wombats for image segmentation on the COCO dataset instead.",
        )
        # A changed abstract is another paper (content hash wins); the old one is deleted.
        again = client.post("/papers", json=record, headers=auth)
        assert again.status_code == 201, again.text
        second = again.json()["results"][0]["id"]
        assert second != first
        assert _get(client, "/papers?q=wombat")["total"] == 1
        assert client.delete(f"/papers/{first}", headers=auth).status_code == 204
        assert _get(client, "/papers?q=quokka")["total"] == 0
        assert client.delete(f"/papers/{second}", headers=auth).status_code == 204
        assert _get(client, "/papers?q=wombat")["total"] == 0
        assert _get(client, "/stats")["counts"]["papers"] == before
        update = client.post(
            "/sparql/update", data={"update": "INSERT DATA { <urn:a> <urn:b> 1 }"}, headers=auth
        )
        assert update.status_code == 204
        assert not client.app.state.store.search_index().usable, "the index cannot follow an update"
        assert _get(client, "/stats")["counts"]["papers"] == before  # now from the scans


def _graph(client: TestClient, url: str) -> tuple[set, set, tuple]:
    response = client.get(url)
    assert response.status_code == 200, (url, response.text)
    body = response.json()
    nodes = {(n["id"], n.get("label"), n.get("paper_count")) for n in body["nodes"]}
    links = {(e["source"], e["target"], e.get("weight"), e.get("predicate")) for e in body["links"]}
    counts = tuple(response.headers[f"X-Graph-{h}"] for h in ("Total-Nodes", "Truncated"))
    return nodes, links, counts


def test_graph_neighbourhoods_from_the_index_equal_the_whole_graph_path(both: tuple) -> None:
    indexed, scanning = both
    top = _get(scanning, "/tasks?limit=1")["items"][0]["key"]
    paper = _get(scanning, "/papers?limit=1")["items"][0]["id"]
    for query in (
        f"focus=task/{top}&depth=1",
        # The star of an entity reads only the papers the limit keeps.
        f"focus=task/{top}&depth=1&limit=3",
        f"focus=task/{top}&depth=1&limit=1",
        f"focus=task/{top}&depth=1&limit=4&min_support=2",
        f"focus=task/{top}&depth=1&types=Task,Method",
        f"focus=task/{top}&depth=2&limit=50",
        f"focus={paper}&depth=2",
        f"focus=task/{top}&projection=entity&depth=1",
        f"focus=task/{top}&depth=2&min_support=2&types=Task,Method,Paper",
    ):
        url = f"/graph?format=d3&{query}"
        assert _graph(indexed, url) == _graph(scanning, url), query


def test_a_neighbourhood_is_cut_at_its_own_default_limit(sample_store: Path) -> None:
    """Without ``limit``, a neighbourhood keeps ``graph_focus_limit`` nodes (the
    whole graph 2,000), says it was cut, and an explicit ``limit`` draws it all."""
    settings = Settings(
        store=str(sample_store), query_workers=1, log_level="warning", graph_focus_limit=12
    )
    with TestClient(create_app(settings)) as client:
        top = _get(client, "/tasks?limit=1")["items"][0]["key"]
        response = client.get(f"/graph?format=d3&focus=task/{top}&depth=3")
        total = int(response.headers["X-Graph-Total-Nodes"])
        assert total > 12, "the sample's neighbourhood must exceed the limit"
        assert response.headers["X-Graph-Truncated"] == "true"
        assert len(response.json()["nodes"]) == 12
        whole = client.get(f"/graph?format=d3&focus=task/{top}&depth=3&limit={total}")
        assert whole.headers["X-Graph-Truncated"] == "false"
        assert len(whole.json()["nodes"]) == total
        everything = client.get("/graph?format=d3")
        assert int(everything.headers["X-Graph-Nodes"]) > total


def test_an_entity_star_reads_only_the_papers_the_limit_keeps(both: tuple) -> None:
    from kg.read.graphview import GraphRequest
    from kg.store.index.graph import entity_star

    indexed, scanning = both
    top = _get(scanning, "/tasks?limit=1")["items"][0]
    index = indexed.app.state.store.search_index()
    data = entity_star(index, top["iri"], GraphRequest(focus=top["iri"], limit=3), 10_000)
    assert data is not None
    papers = [n for n in data.nodes.values() if n["type"] == "Paper"]
    assert len(papers) == 2 and data.omitted == top["papers"] - 2
    assert entity_star(index, "https://w3id.org/mlkg/id/paper/none", GraphRequest(), 10) is None


def test_a_star_is_drawn_as_the_general_walk_draws_it(both: tuple) -> None:
    """The drawing of an entity star's data (drawn without the general walk)
    equals the general walk's, attributes, node order and edges included."""
    import dataclasses

    from kg.read.graphview import GraphRequest, draw
    from kg.store.index.graph import entity_star

    indexed, scanning = both
    store = indexed.app.state.store
    index = store.search_index()
    tops = _get(scanning, "/tasks?limit=2")["items"] + _get(scanning, "/methods?limit=1")["items"]
    drawn = 0
    for top in tops:
        for limit in (None, 1, 2, 3, 1000):
            for types in ("Paper,Task,Method,Dataset,Metric", "Task,Method", "Paper,Task"):
                for min_support in (1, 2, 50):
                    request = GraphRequest(
                        focus=top["iri"],
                        limit=limit,
                        types=frozenset(types.split(",")),
                        min_support=min_support,
                    )
                    data = entity_star(index, top["iri"], request, 10_000)
                    assert data is not None and data.star == top["iri"]
                    general = dataclasses.replace(data, star=None)
                    star = draw(store, request, data=data)
                    assert star == draw(store, request, data=general), request
                    drawn += len(star.nodes)
    assert drawn > 100


def test_whole_graph_export_of_a_large_store_is_a_413(sample_store: Path) -> None:
    settings = Settings(
        store=str(sample_store),
        query_workers=1,
        log_level="warning",
        graph_max_papers=10,
        graph_max_nodes=20,
    )
    with TestClient(create_app(settings)) as client:
        response = client.get("/graph?format=graphml")
        assert response.status_code == 413
        problem = response.json()
        assert "focus" in problem["detail"] and problem["parameter"] == "focus"
        top = _get(client, "/tasks?limit=1")["items"][0]["key"]
        response = client.get(f"/graph?format=d3&focus=task/{top}&depth=3")
        assert response.status_code == 413 and "depth" in response.json()["detail"]
        assert client.get("/graph?format=d3&focus=task/" + top).status_code in {200, 413}


def _broader_tasks(client: TestClient) -> list[str]:
    """Keys of the sample's tasks that have narrower tasks (the taxonomy)."""
    from kg.store.queries import rows, run

    found = rows(run(client.app.state.store, "store/taxonomy", {}))
    return sorted({r["broader"].value.rsplit("/", 1)[-1] for r in found})


def test_task_filters_with_narrower_tasks_are_read_from_the_index(
    both: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kg.store.index import read as ix

    indexed, scanning = both
    calls: list[object] = []
    real = ix.filtered_papers
    monkeypatch.setattr(ix, "filtered_papers", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    broader = _broader_tasks(scanning)
    assert broader, "the sample's taxonomy links some tasks"
    method = _get(scanning, "/methods?limit=1")["items"][0]["key"]
    dataset = _get(scanning, "/datasets?limit=1")["items"][0]["key"]
    for task in broader[:3]:
        for query in (
            f"task={task}",
            f"task={task}&exact=true",
            f"task={task}&method={method}",
            f"task={task}&method={method}&dataset={dataset}",
            f"task={task}&q=learning",
            f"method={method}&dataset={dataset}&q=model",
            # Two single entities: counted by the co-occurrence table.
            f"task={task}&exact=true&method={method}",
            f"method={method}&dataset={dataset}",
            f"method={method}&dataset={dataset}&offset=1",
        ):
            url = f"/papers?{query}&limit=200"
            calls.clear()
            a, b = _get(indexed, url), _get(scanning, url)
            assert calls, f"{url} is answered from the index"
            assert (a["total"], a["filters"]) == (b["total"], b["filters"]), url
            assert [p["id"] for p in a["items"]] == sorted(p["id"] for p in a["items"]), url
            assert {p["id"] for p in a["items"]} == {p["id"] for p in b["items"]}, url
        wide = _get(indexed, f"/papers?task={task}&limit=200")
        narrow = _get(indexed, f"/papers?task={task}&exact=true&limit=200")
        assert wide["total"] >= narrow["total"]
        pages = [
            p["id"]
            for offset in range(0, wide["total"], 2)
            for p in _get(indexed, f"/papers?task={task}&limit=2&offset={offset}")["items"]
        ]
        assert pages == [p["id"] for p in wide["items"]], "pages follow one order"


def test_prefix_lists_page_like_one_sort(both: tuple) -> None:
    from kg.store.index import read as ix

    indexed, _scanning = both
    index = indexed.app.state.store.search_index()
    db = index.reader()
    tiers: set[int] = set()
    for type_name in ("Task", "Method", "Dataset"):
        for prefix in ("r", "tr", "Un", "c", "zzz"):
            low = prefix.lower()
            # Ties in paper counts go by the entity's first name under the prefix.
            every = db.execute(
                "SELECT e.iri, e.type, e.label, e.papers FROM names n JOIN entities e "
                "ON e.eid = n.eid WHERE n.lname >= ? AND n.lname < ? AND e.type = ? "
                "AND e.papers > 0 GROUP BY e.eid ORDER BY e.papers DESC, min(n.lname), e.iri",
                (low, low + "\U0010ffff", type_name),
            ).fetchall()
            for limit, offset in ((1, 0), (3, 1), (2, 5), (200, 0), (5, 500)):
                total, page = ix.ranked_entities(index, type_name, prefix, limit, offset)
                assert total == len(every), (type_name, prefix)
                assert page == every[offset : offset + limit], (type_name, prefix, limit, offset)
            tiers.update(papers.bit_length() for *_entity, papers in every)
    # Pages read the top popularity tiers only: these lists cross several.
    assert len(tiers) >= 3


def test_text_ranking_is_bounded_and_pages_cover_every_match(
    both: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kg.store.index import read as ix

    indexed, _scanning = both
    full = _get(indexed, "/papers?q=learning&limit=200")
    assert full["total"] > 6 and len(full["items"]) == full["total"]
    # Below the window every match is ranked by BM25; above it, the newest
    # RANK_WINDOW matches are ranked and the others follow, newest first.
    monkeypatch.setattr(ix, "RANK_WINDOW", 4)
    index = indexed.app.state.store.search_index()
    match = ix.fts_query("learning")
    newest = [
        pid
        for (pid,) in index.reader().execute(
            "SELECT rowid FROM papers_fts WHERE papers_fts MATCH ? ORDER BY rowid DESC", (match,)
        )
    ]
    ranked = [
        pid
        for (pid,) in index.reader().execute(
            "SELECT f.rowid FROM papers_fts f JOIN papers p ON p.pid = f.rowid WHERE "
            f"papers_fts MATCH ? AND f.rowid IN ({','.join(map(str, newest[:4]))}) "
            "ORDER BY f.rank, p.id",
            (match,),
        )
    ]
    ids = dict(index.reader().execute("SELECT pid, id FROM papers"))
    expected = [ids[p] for p in ranked + newest[4:]]
    bounded = _get(indexed, "/papers?q=learning&limit=200")
    assert bounded["total"] == full["total"]
    assert [p["id"] for p in bounded["items"]] == expected
    pages = [
        p["id"]
        for offset in range(0, full["total"], 3)
        for p in _get(indexed, f"/papers?q=learning&limit=3&offset={offset}")["items"]
    ]
    assert pages == expected
    assert {p["id"] for p in full["items"]} == set(expected)


@pytest.mark.parametrize("rows_per_entity", [4, 1])
def test_entity_search_ranks_like_one_sort_over_every_match(
    both: tuple, rows_per_entity: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same ranking whether the first rows read were enough or every
    matching row had to be read (one row per entity wanted is too few
    whenever a name repeats)."""
    from kg.store.index import search as ix

    monkeypatch.setattr(ix, "ROWS_PER_ENTITY", rows_per_entity)
    indexed, _scanning = both
    index = indexed.app.state.store.search_index()
    db = index.reader()
    names = db.execute("SELECT eid, name FROM names").fetchall()
    entities = {
        r[0]: r[1:] for r in db.execute("SELECT eid, iri, type, label, papers FROM entities")
    }
    # Short prefixes reach tier 1 (one paper each), whose rows are ranked alone.
    for text in ("learn", "Tra", "re", "a", "d", "m", "de", "image", "unlearning", "zzz"):
        low = text.lower()
        best: dict[int, tuple[int, int, str]] = {}
        for eid, name in names:
            lname = name.lower()
            if low in lname:
                rank = (0 if lname == low else 1 if lname.startswith(low) else 2, len(lname), name)
                best[eid] = min(best.get(eid, rank), rank)
        every = sorted(
            (
                (rank[0], -entities[eid][3], rank[1], entities[eid][0]),
                {
                    "iri": entities[eid][0],
                    "type": entities[eid][1],
                    "label": entities[eid][2],
                    "papers": entities[eid][3],
                    "matched": rank[2],
                },
            )
            for eid, rank in best.items()
            if entities[eid][3] > 0
        )
        for limit in (1, 3, 20, 500):
            expected = [item for _key, item in every[:limit]]
            assert ix.search_entities(index, text, limit) == expected, (text, limit)


def test_related_entities_rank_like_one_sort_over_every_pair(both: tuple) -> None:
    """Pairs in two papers or more come from their rank index, pairs in one
    from the primary key; together, the order of one sort over every pair:
    most shared papers, then entity row id."""
    from kg.store.index import read as ix

    indexed, _scanning = both
    index = indexed.app.state.store.search_index()
    db = index.reader()
    entities = {eid: row for eid, *row in db.execute("SELECT eid, iri, type, label FROM entities")}
    pairs: dict[tuple[int, str], list[tuple[int, int]]] = {}
    for a, b, btype, n in db.execute("SELECT a, b, btype, n FROM cooc"):
        pairs.setdefault((a, btype), []).append((-n, b))
    assert any(n < -1 for rows in pairs.values() for n, _b in rows)  # both kinds are there
    assert any(n == -1 for rows in pairs.values() for n, _b in rows)
    for (a, btype), rows in sorted(pairs.items()):
        ranked = [(*entities[b][:3], -n) for n, b in sorted(rows)]
        for limit in (1, 3, 50):
            got = ix.related(index, entities[a][0], btype, limit)
            assert got == [tuple(r) for r in ranked[:limit]], (entities[a][0], btype, limit)


def test_entity_papers_are_paged_alike(both: tuple) -> None:
    indexed, scanning = both
    top = _get(scanning, "/tasks?limit=1")["items"][0]
    full = _get(indexed, top["href"] + "?papers_limit=1000")
    assert len(full["papers"]) == full["paper_count"] > 2  # two pages at least
    for client in (indexed, scanning):
        pages = [
            p
            for offset in range(0, full["paper_count"], 2)
            for p in _get(client, f"{top['href']}?papers_limit=2&papers_offset={offset}")["papers"]
        ]
        assert [p["id"] for p in pages] == [p["id"] for p in full["papers"]]
    assert indexed.get(top["href"] + "?papers_offset=-1").status_code == 422


def test_an_older_index_file_is_upgraded_to_tiers_and_claim_kind_counters(
    store_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from kg.store.embedded import open_store
    from kg.store.index import index_of
    from kg.store.index import read as ix
    from kg.store.index.db import Index, version

    path = Path(f"{store_copy}.index.sqlite")
    cases = [("Task", "r"), ("Method", "tr"), ("Method", "l"), ("Dataset", "c"), ("Metric", "a")]

    def lists(index: Index) -> list:
        """Every case's entities in pages of three."""
        out = []
        for type_name, prefix in cases:
            total, page = ix.ranked_entities(index, type_name, prefix, 3, 0)
            while len(page) < total:
                page += ix.ranked_entities(index, type_name, prefix, 3, len(page))[1]
            out.append((total, page))
        return out

    def claim_totals(index: Index) -> list[int]:
        kinds = [k for (k,) in index.reader().execute("SELECT DISTINCT kind FROM claims")]
        return [ix.claims(index, {"kind": k}, 1, 0)[0] for k in kinds]

    current = Index(path)
    assert version(current.reader()) == 5
    expected = lists(current)
    kinds = current.reader().execute("SELECT kind, count(*) FROM claims GROUP BY kind").fetchall()
    assert claim_totals(current) == [n for _k, n in kinds] and sum(n for _k, n in kinds) > 0
    current.close()
    # A schema-4 file: names by type without tiers, no claim counters. Read-only
    # it is not used (the store is scanned); opened for writing it is upgraded.
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE type_names (type TEXT NOT NULL, lname TEXT NOT NULL, eid INTEGER NOT NULL, "
        "PRIMARY KEY (type, lname, eid)) WITHOUT ROWID; "
        "INSERT INTO type_names SELECT DISTINCT e.type, n.lname, n.eid FROM names n "
        "JOIN entities e ON e.eid = n.eid WHERE e.type IS NOT NULL; DROP TABLE tier_names; "
        "DELETE FROM counts WHERE key LIKE 'claims:%'; "
        "UPDATE meta SET value = '4' WHERE key = 'version';"
    )
    db.close()
    old = Index(path, read_only=True)
    assert version(old.reader()) == 4 and not old.trusted
    old.close()
    # Opening the store, even read-only (kg serve without an update token), upgrades it.
    monkeypatch.delenv("KG_INDEX", raising=False)  # the module's scanning service sets it
    store = open_store(store_copy, read_only=True)
    upgraded = index_of(store)
    assert upgraded is not None and version(upgraded.reader()) == 5
    assert lists(upgraded) == expected and claim_totals(upgraded) == [n for _k, n in kinds]
    tables = {r[0] for r in upgraded.reader().execute("SELECT name FROM sqlite_master")}
    assert "type_names" not in tables
    store.close()


def _filtered_by_sql(db: object, eids: list[int], match: str) -> list[str]:
    """The papers of these entities matching ``match``, by id, intersected in SQLite
    (what ``filtered_papers`` did before the hit bitmaps)."""
    marks = ",".join("?" * len(eids))
    rows = db.execute(  # type: ignore[attr-defined]
        f"SELECT DISTINCT l.paper_id FROM links l WHERE l.eid IN ({marks}) AND l.pid IN "
        "(SELECT rowid FROM papers_fts WHERE papers_fts MATCH ?) ORDER BY l.paper_id",
        [*eids, match],
    )
    return [paper_id for (paper_id,) in rows]


def test_text_with_entity_filters_pages_like_one_intersection(both: tuple) -> None:
    from kg.store.index import read as ix

    indexed, _scanning = both
    index = indexed.app.state.store.search_index()
    db = index.reader()
    top = db.execute(
        "SELECT iri, eid FROM entities WHERE papers > 0 ORDER BY papers DESC, iri LIMIT 3"
    ).fetchall()
    for word in ("learning", "model", "the", "zzzqqq"):
        match = ix.fts_query(word)
        for entry in ([top[0][0]], [top[0][0], top[1][0]], [top[2][0]]):
            eids = [eid for iri, eid in top if iri in entry]
            every = _filtered_by_sql(db, eids, match)
            for limit, offset in ((1, 0), (3, 2), (200, 0), (5, len(every) - 1), (5, 10_000)):
                total, rows = ix.filtered_papers(index, [entry], word, limit, offset)
                assert total == len(every), (word, entry)
                assert [pid for _iri, pid, _t in rows] == every[offset : offset + limit]


def test_kept_filters_follow_commits(store_copy: Path) -> None:
    # A read connection keeps a word's hit bitmap and a filter's paper list
    # (kg/store/index/kept.py): another connection's commit must drop both.
    import sqlite3

    from kg.store.index import read as ix
    from kg.store.index.db import Index

    path = Path(f"{store_copy}.index.sqlite")
    index = Index(path, read_only=True)
    db = index.reader()
    eid, iri, rel = db.execute(
        "SELECT e.eid, e.iri, l.rel FROM entities e JOIN links l ON l.eid = e.eid "
        "WHERE e.papers > 0 LIMIT 1"
    ).fetchone()
    linked, linked_id = db.execute(
        "SELECT pid, paper_id FROM links WHERE eid = ?", (eid,)
    ).fetchone()
    pid, paper_id = db.execute(
        "SELECT pid, id FROM papers WHERE pid NOT IN (SELECT pid FROM links WHERE eid = ?) LIMIT 1",
        (eid,),
    ).fetchone()

    def commit(sql: str, args: tuple) -> None:  # another writer, possibly another process
        with sqlite3.connect(path) as other:
            other.execute(sql, args)

    assert ix.filtered_papers(index, [iri], "quokkaword", 10, 0)[0] == 0  # now held
    commit("UPDATE papers_fts SET abstract = abstract || ' quokkaword' WHERE rowid = ?", (linked,))
    total, rows = ix.filtered_papers(index, [iri], "quokkaword", 10, 0)
    assert (total, [r[1] for r in rows]) == (1, [linked_id]), "the word's bitmap was read again"
    commit("UPDATE papers_fts SET abstract = abstract || ' quokkaword' WHERE rowid = ?", (pid,))
    assert ix.filtered_papers(index, [iri], "quokkaword", 10, 0)[0] == 1  # not linked yet
    commit("INSERT INTO links VALUES (?, ?, ?, ?)", (eid, paper_id, rel, pid))
    total, rows = ix.filtered_papers(index, [iri], "quokkaword", 10, 0)
    assert total == 2 and paper_id in [r[1] for r in rows], "the filter's papers were read again"
    index.close()
