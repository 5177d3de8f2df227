"""REST endpoints over results: leaderboards, related papers and comparisons.

``GET /leaderboards`` lists dataset × metric boards of absolute results;
``GET /leaderboards/{dataset_key}/{metric_key}`` ranks one board best first by
the metric's direction, each row with its claim's offsets into the abstract;
``GET /papers/{id}/related`` ranks papers by the IDF of the tasks, methods and
datasets they share; ``GET /compare?papers=a,b`` puts papers side by side.

All of them answer from the store's index when it is in step with the store
(:class:`kg.store.index.results.IndexedResults`: lookups, nothing to build after
a start or a write); otherwise from :class:`kg.read.results.ResultsIndex`, which
reads the store through named queries once per store generation (every write
through the service bumps it; a remote store is re-read every
:data:`STALE_AFTER` seconds).
"""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse

from kg.read.papers import resolve_paper_id
from kg.read.results import ResultsIndex, ResultsIndexCache, indexed_results
from kg.store.index.results import IndexedResults
from kg.vocab import paper_iri
from service.deps import get_store
from service.errors import InvalidParameter, NotFound

router = APIRouter()
_cache = ResultsIndexCache()

STALE_AFTER = 30.0
"""Seconds a remote store's results index is reused (its writers do not tell us)."""
MAX_PAGE = 500
MAX_COMPARE = 10
MAX_FILTER = 2000

Filter = Annotated[
    str | None,
    Query(max_length=MAX_FILTER, description="IRI, type/key, key or label (any case)"),
]


def results_index(request: Request) -> ResultsIndex | IndexedResults:
    """The results read model of the store this request sees."""
    store = get_store(request)
    indexed = indexed_results(store)
    if indexed is not None:
        return indexed
    pool = getattr(request.app.state, "query_pool", None)
    generation = getattr(pool, "generation", None)
    token: object = (
        ("generation", generation)
        if generation is not None
        else ("clock", int(time.monotonic() // STALE_AFTER))
    )
    return _cache.get(store, token)


def resolve(
    index: ResultsIndex | IndexedResults, segment: str, value: str | None, parameter: str
) -> str | None:
    """The IRI an entity filter names (IRI, ``type/key``, key, label or alias); 404 if none."""
    if value is None:
        return None
    iri = index.find(segment, value)
    if iri is None:
        raise NotFound(f"no {segment} {value!r}", parameter=parameter)
    return iri


def paper_of(request: Request, index: ResultsIndex | IndexedResults, given: str) -> str:
    """The paper IRI an id names: a paper's own id (looked up in the read model,
    no store query), else the id its source gave it (``kg:sourceId``)."""
    iri = paper_iri(given).value
    if index.has_paper(iri):
        return iri
    return paper_iri(resolve_paper_id(get_store(request), given)).value


def _page(request: Request, items: list[Any], limit: int, offset: int) -> dict[str, Any]:
    total = len(items)

    def link(new_offset: int) -> str:
        query = request.url.include_query_params(offset=new_offset, limit=limit).query
        return f"{request.url.path}?{query}"

    return {
        "total": total,
        "limit": limit,
        "offset": offset,
        "next": link(offset + limit) if offset + limit < total else None,
        "previous": link(max(0, offset - limit)) if offset > 0 and total else None,
        "items": items[offset : offset + limit],
    }


@router.get("/leaderboards", tags=["results"], summary="List leaderboards")
def list_leaderboards(
    request: Request,
    task: Filter = None,
    dataset: Filter = None,
    metric: Filter = None,
    min_results: Annotated[int, Query(ge=1, le=100_000, description="Fewest results")] = 1,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="Page size")] = 20,
    offset: Annotated[int, Query(ge=0, le=1_000_000, description="Items to skip")] = 0,
) -> JSONResponse:
    """One item per dataset × metric with absolute results, most results first.

    ``task`` keeps boards with a result from a paper on that task or a narrower one."""
    index = results_index(request)
    items = index.leaderboards(
        task=resolve(index, "task", task, "task"),
        dataset=resolve(index, "dataset", dataset, "dataset"),
        metric=resolve(index, "metric", metric, "metric"),
        min_results=min_results,
    )
    return JSONResponse(_page(request, items, limit, offset))


@router.get("/leaderboards/{dataset_key}/{metric_key}", tags=["results"], summary="One leaderboard")
def get_leaderboard(
    request: Request,
    dataset_key: Annotated[str, Path(max_length=MAX_FILTER, description="Dataset key")],
    metric_key: Annotated[str, Path(max_length=MAX_FILTER, description="Metric key")],
) -> JSONResponse:
    """The absolute results on a dataset in a metric, best first by the metric's
    direction; ``claim.start``/``end`` are offsets into the paper's abstract."""
    index = results_index(request)
    dataset = resolve(index, "dataset", dataset_key, "dataset_key")
    metric = resolve(index, "metric", metric_key, "metric_key")
    board = index.leaderboard(dataset, metric)
    if board is None:
        raise NotFound(f"no absolute results on {dataset_key!r} in {metric_key!r}")
    return JSONResponse(board)


@router.get("/papers/{paper_id}/related", tags=["papers"], summary="Related papers")
def related_papers(
    request: Request,
    paper_id: Annotated[str, Path(max_length=MAX_FILTER, description="Paper id")],
    limit: Annotated[int, Query(ge=1, le=100, description="How many")] = 10,
) -> JSONResponse:
    """Papers sharing tasks, methods or datasets, by summed IDF of what they
    share (rare entities weigh more), each with the shared entities; never itself."""
    index = results_index(request)
    iri = paper_of(request, index, paper_id)
    items = index.related(iri, limit)
    if items is None:
        raise NotFound(f"no paper {paper_id!r}", parameter="paper_id")
    return JSONResponse({"paper": index.paper_ref(iri), "items": items})


@router.get("/compare", tags=["results"], summary="Compare papers side by side")
def compare(
    request: Request,
    papers: Annotated[
        str,
        Query(max_length=MAX_FILTER, description=f"Paper ids, comma-separated (≤ {MAX_COMPARE})"),
    ],
) -> JSONResponse:
    """Each paper's tasks, proposed methods, datasets, metrics and results."""
    ids = [p.strip() for p in papers.split(",") if p.strip()]
    if not ids:
        raise InvalidParameter("give at least one paper id", parameter="papers")
    if len(ids) > MAX_COMPARE:
        raise InvalidParameter(f"at most {MAX_COMPARE} papers", parameter="papers")
    index = results_index(request)
    iris = {p: paper_of(request, index, p) for p in ids}
    missing = [p for p in ids if not index.has_paper(iris[p])]
    if missing:
        raise NotFound(f"no paper {', '.join(map(repr, missing))}", parameter="papers")
    return JSONResponse({"items": index.compare(dict.fromkeys(iris[p] for p in ids))})
