"""Dereferencing of paper and entity IRIs, and their HTML pages.

``/id/paper/{id}`` and ``/id/{type}/{key}`` (the paths of the IRIs) answer by
content negotiation: HTML, Turtle, N-Triples, RDF/XML, JSON-LD, or a 303 to
the REST resource for ``application/json``. The pages are rendered from the
same JSON the REST API returns (:func:`service.rest_data.paper_detail`,
:func:`service.rest_data.entity_detail`), so the HTML and the JSON never
disagree. Every value from the graph is escaped.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from html import escape
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import RedirectResponse

from kg import schema
from kg.read.papers import resolve_paper_id
from kg.reading.latex import clean, clean_label
from kg.store.embedded import GraphStore
from kg.store.queries import MAX_STRING
from kg.vocab import paper_graph, paper_iri
from service import negotiation
from service.deps import get_store
from service.errors import NotAcceptable, NotFound
from service.rest_data import (
    EntityKind,
    alternates,
    entity_detail,
    invalid,
    paper_detail,
    paper_href,
    run,
)
from service.results_api import results_index

router = APIRouter()

_STYLE_TEMPLATE = """
body { font: 16px/1.5 system-ui, sans-serif; max-width: 56rem; margin: 2rem auto; padding: 0 1rem;
       color: #222; }
h1 { font-size: 1.5rem; margin-bottom: .2rem; }
.meta { color: #666; font-size: .9rem; }
.abstract { background: #fafafa; border-left: 3px solid #ccc; padding: .5rem 1rem; }
mark { border-radius: 3px; padding: 0 2px; }
{marks}
mark a { color: inherit; text-decoration: none; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
td, th { border-bottom: 1px solid #eee; padding: .25rem .5rem; text-align: left;
         vertical-align: top; }
.count { color: #666; }
"""

_STYLE = _STYLE_TEMPLATE.replace(
    "{marks}",
    " ".join(f"mark.{k.segment} {{ background: {k.highlight}; }}" for k in schema.ENTITY_TYPES),
)

# A paper's lists, each kind's proposed entities first (kg.schema).
_GROUP_TITLES = tuple(
    (r.key, r.title)
    for k in schema.ENTITY_TYPES
    for r in sorted(k.relations, key=lambda r: not r.proposed)
)


def id_path(item: dict[str, Any]) -> str:
    """The local dereferencing path of an entity of the API's JSON."""
    return f"/id/{item['type']}/{quote(item['key'], safe='')}"


def _page(title: str, body: str, *, alternates: list[tuple[str, str]]) -> str:
    links = "\n".join(
        f'<link rel="alternate" type="{escape(media)}" href="{escape(href)}">'
        for href, media in alternates
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title>\n{links}\n<style>{_STYLE}</style></head>\n"
        f"<body>\n{body}\n</body></html>\n"
    )


def _formats(path: str, json_href: str) -> tuple[str, list[tuple[str, str]]]:
    alternates = [
        (json_href, "application/json"),
        (f"{path}?format=ttl", "text/turtle"),
        (f"{path}?format=jsonld", "application/ld+json"),
    ]
    names = {"application/json": "JSON", "text/turtle": "Turtle", "application/ld+json": "JSON-LD"}
    line = " · ".join(f'<a href="{escape(h)}">{names[m]}</a>' for h, m in alternates)
    return f'<p class="meta">Also as {line}</p>', alternates


def highlight(abstract: str, paper: dict[str, Any]) -> str:
    """The abstract as HTML, its inline LaTeX rendered as text (``$\\times$46`` →
    ``×46``, as the explorer shows it), with each entity mention marked and linked.

    Mentions carry offsets into the abstract as given; they are mapped onto the
    clean text through :class:`kg.latex.Cleaned`'s per-character origins."""
    cleaned = clean(abstract)
    shown = cleaned.text
    spans: list[tuple[int, int, dict[str, Any]]] = []
    for group, _ in _GROUP_TITLES:
        for item in paper.get(group, []):
            for m in item.get("mentions", []):
                if 0 <= m["start"] < m["end"] <= len(abstract):
                    # The clean characters that came from inside the mention.
                    start = bisect_left(cleaned.starts, m["start"])
                    end = bisect_right(cleaned.ends, m["end"])
                    if start < end:
                        spans.append((start, end, item))
    spans.sort(key=lambda s: (s[0], -s[1]))
    out: list[str] = []
    at = 0
    for start, end, item in spans:
        if start < at:
            continue  # overlapping mentions: the earlier, longer one wins
        out.append(escape(shown[at:start]))
        out.append(
            f'<mark class="{escape(item["type"])}" title="{escape(item["type"])}: '
            f'{escape(item["label"] or "")}"><a href="{escape(id_path(item))}">'
            f"{escape(shown[start:end])}</a></mark>"
        )
        at = end
    out.append(escape(shown[at:]))
    return "".join(out)


def paper_page(
    paper: dict[str, Any],
    *,
    path: str,
    json_href: str,
    results: list[dict[str, Any]] | None = None,
    related: list[dict[str, Any]] | None = None,
) -> str:
    """The HTML page of a paper, with its results and related papers when given."""
    title = clean_label(paper.get("title") or "") or paper["id"]
    formats, alternates = _formats(path, json_href)
    meta = [escape(paper["id"])]
    for key in ("year", "venue"):
        if paper.get(key):
            meta.append(escape(str(paper[key])))
    parts = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">{" · ".join(meta)}</p>',
    ]
    if paper.get("authors"):
        parts.append(f'<p class="meta">{escape(", ".join(paper["authors"]))}</p>')
    parts.append(f'<p class="abstract">{highlight(paper["abstract"], paper)}</p>')
    for group, heading in _GROUP_TITLES:
        items = paper.get(group) or []
        if not items:
            continue
        lis = "".join(
            f'<li><a href="{escape(id_path(i))}">{escape(i["label"] or i["key"])}</a></li>'
            for i in items
        )
        parts.append(f"<h2>{heading}</h2><ul>{lis}</ul>")
    claims = paper.get("claims") or []
    if claims:
        rows = "".join(
            "<tr><td>{kind}</td><td>{text}</td><td>{subject}</td><td>{values}</td></tr>".format(
                kind=escape(c.get("kind") or ""),
                text=escape(clean_label(c["text"])),
                subject=escape(c.get("subject") or ""),
                values=escape(", ".join(clean_label(v["text"]) for v in c.get("values", []))),
            )
            for c in claims
        )
        parts.append(
            "<h2>Claims</h2><table><tr><th>Kind</th><th>Claim</th><th>About</th>"
            f"<th>Values</th></tr>{rows}</table>"
        )
    parts.extend(results_sections(results or [], related or []))
    parts.append(formats)
    return _page(title, "\n".join(parts), alternates=alternates)


def results_sections(results: list[dict[str, Any]], related: list[dict[str, Any]]) -> list[str]:
    """The results table and the related-papers list of a paper page."""
    parts = []

    def label(ref: dict[str, Any] | None) -> str:
        return escape((ref or {}).get("label") or "")

    if results:
        rows = "".join(
            "<tr><td>{value}</td><td>{metric}</td><td>{dataset}</td><td>{method}</td>"
            "<td>{kind}</td></tr>".format(
                value=escape(r["value"]["text"]),
                metric=label(r["metric"]),
                dataset=label(r["dataset"]),
                method=label(r["method"]) + ("" if r["proposed"] else " (baseline)"),
                kind="relative" if r["relative"] else "absolute",
            )
            for r in results
        )
        parts.append(
            "<h2>Results</h2><table><tr><th>Value</th><th>Metric</th><th>Dataset</th>"
            f"<th>Method</th><th></th></tr>{rows}</table>"
        )
    if related:
        lis = "".join(
            '<li><a href="/id/paper/{id}">{title}</a> <span class="meta">{score} · {shared}'
            "</span></li>".format(
                id=escape(quote(r["paper"]["id"], safe="")),
                title=escape(r["paper"]["title"] or r["paper"]["id"]),
                score=r["score"],
                shared=escape(", ".join(s["label"] or s["iri"] for s in r["shared"][:5])),
            )
            for r in related
        )
        parts.append(f"<h2>Related papers</h2><ul>{lis}</ul>")
    return parts


def entity_page(entity: dict[str, Any], *, path: str, json_href: str) -> str:
    """The HTML page of a research entity."""
    label = entity.get("label") or entity["key"]
    formats, alternates = _formats(path, json_href)
    parts = [
        f"<h1>{escape(label)}</h1>",
        f'<p class="meta">{escape(entity["type"])} · {escape(entity["iri"])}</p>',
    ]
    if entity.get("aliases"):
        parts.append(f'<p class="meta">Also called: {escape(", ".join(entity["aliases"]))}</p>')
    papers = entity.get("papers") or []
    lis = "".join(
        f'<li><a href="/id/paper/{escape(quote(p["id"], safe=""))}">'
        f'{escape(p.get("title") or p["id"])}</a> <span class="count">'
        f"({escape(', '.join(p.get('relations', [])))})</span></li>"
        for p in papers
    )
    parts.append(f"<h2>Papers ({entity.get('paper_count', len(papers))})</h2><ul>{lis}</ul>")
    for group, items in (entity.get("related") or {}).items():
        if not items:
            continue
        lis = "".join(
            f'<li><a href="{escape(id_path(i))}">{escape(i["label"] or i["key"])}</a> '
            f'<span class="count">{int(i["papers"])} shared</span></li>'
            for i in items
        )
        parts.append(f"<h2>Related {escape(group)}</h2><ul>{lis}</ul>")
    parts.append(formats)
    return _page(label, "\n".join(parts), alternates=alternates)


# ---------------------------------------------------------------- dereferencing

_DEREF_FORMATS = negotiation.GRAPH_FORMATS[:4]  # Turtle, N-Triples, RDF/XML, JSON-LD
_DEREF_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The resource as HTML, Turtle, N-Triples, RDF/XML or JSON-LD",
        "content": {"text/html": {}, "text/turtle": {}, "application/ld+json": {}},
    },
    303: {"description": "`Accept: application/json` (or `format=json`): see the REST resource"},
    404: {"description": "Not in the graph"},
    406: {"description": "No acceptable representation"},
}
DerefFormat = Annotated[
    str | None,
    Query(max_length=100, description="html, ttl, nt, rdf, jsonld or json; wins over Accept"),
]


def _representation(request: Request, format: str | None) -> str | negotiation.Format:
    """``"html"``, ``"json"`` or the RDF format a dereferencing request asks for."""
    if format is not None:
        name = format.strip().lower()
        if name in {"html", "text/html"}:
            return "html"
        if name in {"json", "application/json"}:
            return "json"
        fmt = negotiation.by_name(name, _DEREF_FORMATS)
        if fmt is None:
            raise invalid("format", f"{format!r} is not one of html, ttl, nt, rdf, jsonld, json")
        return fmt
    ranges = negotiation.parse_accept(request.headers.get("accept"))
    if negotiation.prefers_html(ranges):
        return "html"
    fmt = negotiation.choose(ranges, _DEREF_FORMATS)
    if fmt is not None:
        return fmt
    # parse_accept reads application/json as SPARQL results JSON: here it means our JSON.
    if negotiation.quality(ranges, "application/sparql-results+json") > 0:
        return "json"
    raise NotAcceptable(
        "available: text/html, text/turtle, application/n-triples, "
        "application/rdf+xml, application/ld+json, application/json"
    )


def _deref(
    request: Request,
    store: GraphStore,
    format: str | None,
    *,
    path: str,
    json_href: str,
    html: Any,
    describe: tuple[str, dict[str, object]],
) -> Response:
    wanted = _representation(request, format)
    headers = {"Vary": "Accept", "Link": alternates(path, json_href)}
    if wanted == "json":
        return RedirectResponse(json_href, status_code=303, headers=headers)
    if wanted == "html":
        return Response(html(), media_type="text/html; charset=utf-8", headers=headers)
    assert isinstance(wanted, negotiation.Format)
    from pyoxigraph import serialize

    from kg.vocab import PREFIXES

    name, params = describe
    triples = list(run(store, name, **params))
    body = serialize(triples, format=wanted.pyoxigraph, prefixes=PREFIXES)
    return Response(body, media_type=wanted.media_type, headers=headers)


@router.get(
    "/id/paper/{paper_id:path}",
    tags=["linked data"],
    summary="Dereference a paper IRI",
    response_class=Response,
    responses=_DEREF_RESPONSES,
)
def deref_paper(
    paper_id: Annotated[str, Path(max_length=MAX_STRING)],
    request: Request,
    store: Annotated[GraphStore, Depends(get_store)],
    format: DerefFormat = None,
) -> Response:
    """The paper ``https://w3id.org/mlkg/id/paper/{id}`` by content negotiation:
    HTML for browsers, Turtle, N-Triples, RDF/XML or JSON-LD (the paper's named
    graph plus its entities' labels), or a 303 to ``/papers/{id}`` for
    ``application/json``. Served directly (no redirect) with ``Vary: Accept``."""
    detail = paper_detail(store, resolve_paper_id(store, paper_id))
    if detail is None:
        raise NotFound(f"no paper with id {paper_id!r}", slug="unknown-paper")
    paper_id = detail["id"]
    path = "/id/paper/" + quote(paper_id, safe="")
    json_href = paper_href(paper_id)

    def html() -> str:
        index = results_index(request)
        iri = paper_iri(paper_id).value
        compared = index.compare([iri])
        return paper_page(
            detail,
            path=path,
            json_href=json_href,
            results=compared[0]["results"] if compared else [],
            related=index.related(iri, 10) or [],
        )

    return _deref(
        request,
        store,
        format,
        path=path,
        json_href=json_href,
        html=html,
        describe=("describe-paper", {"graph": paper_graph(paper_id)}),
    )


@router.get(
    "/id/{type}/{key:path}",
    tags=["linked data"],
    summary="Dereference an entity IRI",
    response_class=Response,
    responses=_DEREF_RESPONSES,
)
def deref_entity(
    type: EntityKind,
    key: Annotated[str, Path(max_length=MAX_STRING)],
    request: Request,
    store: Annotated[GraphStore, Depends(get_store)],
    format: DerefFormat = None,
) -> Response:
    """The entity ``https://w3id.org/mlkg/id/{type}/{key}`` by content negotiation,
    as for papers; ``application/json`` gets a 303 to ``/entities/{type}/{key}``."""
    detail = entity_detail(store, type.value, key)
    if detail is None:
        raise NotFound(f"no {type.value} with key {key!r}", slug="unknown-entity")
    path = f"/id/{type.value}/{quote(key, safe='')}"
    json_href = detail["href"]
    return _deref(
        request,
        store,
        format,
        path=path,
        json_href=json_href,
        html=lambda: entity_page(detail, path=path, json_href=json_href),
        describe=("describe-entity", {"entity": detail["iri"]}),
    )
