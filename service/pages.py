"""HTML pages for dereferenced paper and entity IRIs.

The pages are rendered from the same JSON the REST API returns
(:func:`service.api.paper_detail`, :func:`service.api.entity_detail`), so the
HTML and the JSON never disagree. Every value from the graph is escaped.
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote

_STYLE = """
body { font: 16px/1.5 system-ui, sans-serif; max-width: 56rem; margin: 2rem auto; padding: 0 1rem;
       color: #222; }
h1 { font-size: 1.5rem; margin-bottom: .2rem; }
.meta { color: #666; font-size: .9rem; }
.abstract { background: #fafafa; border-left: 3px solid #ccc; padding: .5rem 1rem; }
mark { border-radius: 3px; padding: 0 2px; }
mark.task { background: #ffe8a3; } mark.method { background: #c8e6ff; }
mark.dataset { background: #d4f5d0; } mark.metric { background: #f3d4f5; }
mark a { color: inherit; text-decoration: none; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
td, th { border-bottom: 1px solid #eee; padding: .25rem .5rem; text-align: left;
         vertical-align: top; }
.count { color: #666; }
"""

_GROUP_TITLES = (
    ("tasks", "Tasks"),
    ("proposed_methods", "Proposed methods"),
    ("methods", "Methods used"),
    ("datasets", "Datasets"),
    ("metrics", "Metrics"),
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
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
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
    """The abstract as HTML with each entity mention marked and linked."""
    spans: list[tuple[int, int, dict[str, Any]]] = []
    for group, _ in _GROUP_TITLES:
        for item in paper.get(group, []):
            for m in item.get("mentions", []):
                if 0 <= m["start"] < m["end"] <= len(abstract):
                    spans.append((m["start"], m["end"], item))
    spans.sort(key=lambda s: (s[0], -s[1]))
    out: list[str] = []
    at = 0
    for start, end, item in spans:
        if start < at:
            continue  # overlapping mentions: the earlier, longer one wins
        out.append(escape(abstract[at:start]))
        out.append(
            f'<mark class="{escape(item["type"])}" title="{escape(item["type"])}: '
            f'{escape(item["label"] or "")}"><a href="{escape(id_path(item))}">'
            f"{escape(abstract[start:end])}</a></mark>"
        )
        at = end
    out.append(escape(abstract[at:]))
    return "".join(out)


def paper_page(paper: dict[str, Any], *, path: str, json_href: str) -> str:
    """The HTML page of a paper."""
    title = paper.get("title") or paper["id"]
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
                text=escape(c["text"]),
                subject=escape(c.get("subject") or ""),
                values=escape(", ".join(v["text"] for v in c.get("values", []))),
            )
            for c in claims
        )
        parts.append(
            "<h2>Claims</h2><table><tr><th>Kind</th><th>Claim</th><th>About</th>"
            f"<th>Values</th></tr>{rows}</table>"
        )
    parts.append(formats)
    return _page(title, "\n".join(parts), alternates=alternates)


def entity_page(entity: dict[str, Any], *, path: str, json_href: str) -> str:
    """The HTML page of a task, method, dataset or metric."""
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
        f'({escape(", ".join(p.get("relations", [])))})</span></li>'
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
