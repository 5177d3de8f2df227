"""A remote graph store: any SPARQL 1.1 Protocol + Graph Store Protocol server.

``RemoteStore`` implements :class:`kg.store.GraphStore` over HTTP, so the CLI
and the service run unchanged against a store on another machine
(``kg serve --store http://host:7878``). Results are parsed back into
pyoxigraph objects (``QuerySolutions``, ``QueryBoolean``, ``QueryTriples``):
callers see the same types as with the embedded store.

Endpoints
    The default layout is ``oxigraph serve``'s: for a base URL ``U`` queries go
    to ``U/query``, updates to ``U/update`` and Graph Store Protocol requests
    to ``U/store``. Other servers name them differently (Fuseki:
    ``/ds/query``, ``/ds/update``, ``/ds/data``); give them explicitly with the
    keyword arguments or the environment variables ``KG_STORE_QUERY_URL``,
    ``KG_STORE_UPDATE_URL`` and ``KG_STORE_GSP_URL``. ``KG_STORE_TIMEOUT``
    (seconds, default 60) bounds every request.

Default graph
    The project's SPARQL default graph is the union of all graphs. The server
    must be configured that way (``oxigraph serve --union-default-graph``;
    Fuseki: ``tdb2:unionDefaultGraph true``): listing thousands of paper graphs
    in ``default-graph-uri`` parameters on every request does not scale. The
    store checks this when it opens and refuses a server whose default graph
    is not the union. An explicit ``default_graph``/``named_graphs`` is sent as
    ``default-graph-uri``/``named-graph-uri`` parameters, which override it.

Substitutions
    pyoxigraph pre-binds variables; the SPARQL protocol cannot. They are
    emulated by a ``VALUES`` block opening the top-level ``WHERE`` group, with
    the terms as escaped N-Triples (``str(term)``): user text never enters the
    query unescaped. A sub-``SELECT`` that does not project a variable does not
    see its binding.

Writes
    Each paper graph is replaced by one GSP ``PUT ?graph=`` (atomic per graph, so
    a reader never sees half a paper); entity triples go to the entities graph by
    one GSP ``POST`` per batch, before the papers; consolidation's rewrites are
    one ``DELETE DATA`` / ``INSERT DATA`` update each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cache
from typing import IO

import httpx
from pyoxigraph import (
    BlankNode,
    Literal,
    NamedNode,
    Quad,
    QueryResultsFormat,
    QuerySolutions,
    RdfFormat,
    Store,
    Triple,
    parse,
    parse_query_results,
    serialize,
)

from kg.mapping.papers import PaperQuads
from kg.resources import ontology_dir, queries_dir
from kg.settings import Settings
from kg.store.common import QueryResult, StoreError, Term, data_update, merge_labels, sha256
from kg.store.sparql_text import tokens
from kg.vocab import (
    ENTITIES_GRAPH,
    KG,
    ONTOLOGY_GRAPH,
    ONTOLOGY_IRI,
    PREFIXES,
    paper_graph,
    paper_id_from_graph,
    paper_iri,
)

_ACCEPT_QUERY = "application/sparql-results+json, application/n-triples;q=0.9"
_NTRIPLES = "application/n-triples"
_NQUADS = "application/n-quads"
_BATCH = 400
Labels = Mapping[str, str] | None  # the known preferred labels a writer may pass
"""Rows per VALUES block in internal look-ups: keeps each request small."""


@cache
def _named_query(name: str) -> str:
    return (queries_dir() / "store" / f"{name}.rq").read_text(encoding="utf-8")


class RemoteStore:
    """A SPARQL 1.1 Protocol + Graph Store Protocol server as a :class:`GraphStore`."""

    def __init__(
        self,
        url: str,
        *,
        read_only: bool = False,
        query_url: str | None = None,
        update_url: str | None = None,
        store_url: str | None = None,
        timeout: float | None = None,
    ) -> None:
        base = url.rstrip("/")
        self.location = base
        self.read_only = read_only
        setting = Settings.one
        self.query_url = query_url or setting("store_query_url") or f"{base}/query"
        self.update_url = update_url or setting("store_update_url") or f"{base}/update"
        self.store_url = store_url or setting("store_gsp_url") or f"{base}/store"
        seconds = float(setting("store_timeout")) if timeout is None else timeout
        # One pooled client: keep-alive matters when ingest sends a PUT per paper.
        # It is thread-safe, so the service's worker threads share it.
        self._http = httpx.Client(timeout=httpx.Timeout(seconds, connect=min(5.0, seconds)))
        try:
            if not read_only:
                self.ensure_ontology()
            self._check_union_default_graph()
        except BaseException:
            self._http.close()
            raise

    # ------------------------------------------------------------ HTTP

    def _send(self, method: str, url: str, **kwargs: object) -> httpx.Response:
        try:
            return self._http.request(method, url, **kwargs)  # type: ignore[arg-type]
        except httpx.TimeoutException as exc:
            raise StoreError(f"the SPARQL store at {url} did not answer in time ({exc})") from exc
        except httpx.HTTPError as exc:
            raise StoreError(f"cannot reach the SPARQL store at {url}: {exc}") from exc

    def _check(self, response: httpx.Response, what: str) -> httpx.Response:
        if response.is_success:
            return response
        detail = response.text.strip()[:500]
        if response.status_code == 400:
            # The embedded store raises SyntaxError for a bad query or update;
            # a remote 400 means the same to callers.
            raise SyntaxError(detail or f"the SPARQL store rejected the {what}")
        raise StoreError(
            f"{what} failed at {response.request.url.copy_with(query=None)}: "
            f"HTTP {response.status_code} {detail}"
        )

    def _dataset_params(
        self, default_graph: Sequence[str] | None, named_graphs: Sequence[str] | None
    ) -> list[tuple[str, str]]:
        params = [("default-graph-uri", g) for g in default_graph or ()]
        params += [("named-graph-uri", g) for g in named_graphs or ()]
        return params

    # ------------------------------------------------------------ GraphStore

    def query(
        self,
        sparql: str,
        *,
        substitutions: dict[str, Term] | None = None,
        default_graph: Sequence[str] | None = None,
        named_graphs: Sequence[str] | None = None,
        base_iri: str | None = None,
    ) -> QueryResult:
        """Run a query on the server; the result has the embedded store's types."""
        if substitutions:
            names = list(substitutions)
            sparql = inject_values(sparql, names, [[substitutions[n] for n in names]])
        if base_iri is not None:
            # The protocol has no base IRI parameter: a BASE declaration may lead the prologue.
            sparql = f"BASE {NamedNode(base_iri)}\n{sparql}"
        response = self._check(
            self._send(
                "POST",
                self.query_url,
                params=self._dataset_params(default_graph, named_graphs),
                content=sparql.encode("utf-8"),
                headers={
                    "Content-Type": "application/sparql-query; charset=utf-8",
                    "Accept": _ACCEPT_QUERY,
                },
            ),
            "query",
        )
        media = response.headers.get("content-type", "").split(";")[0].strip().lower()
        results_format = QueryResultsFormat.from_media_type(media) if media else None
        if results_format is not None:
            return parse_query_results(response.content, results_format)
        rdf_format = RdfFormat.from_media_type(media) if media else None
        if rdf_format is None:
            raise StoreError(f"the SPARQL store answered a query with an unknown type {media!r}")
        return _as_query_triples(response.content, rdf_format)

    def update(self, sparql: str) -> None:
        """Send a SPARQL update."""
        self._check_writable()
        self._check(
            self._send(
                "POST",
                self.update_url,
                content=sparql.encode("utf-8"),
                headers={"Content-Type": "application/sparql-update; charset=utf-8"},
            ),
            "update",
        )

    def paper_hashes(self, ids: Sequence[str]) -> dict[str, str]:
        """Stored content hashes, looked up in batches through ``paper-hashes.rq``."""
        found: dict[str, str] = {}
        by_iri = {paper_iri(pid).value: pid for pid in ids}
        rows = [[paper_iri(pid), paper_graph(pid)] for pid in ids]
        for chunk in _chunks(rows, _BATCH):
            sparql = inject_values(_named_query("paper-hashes"), ["paper", "graph"], chunk)
            for solution in self._select(sparql):
                found[by_iri[solution["paper"].value]] = solution["hash"].value
        return found

    def preferred_labels(self, iris: Iterable[str]) -> dict[str, str]:
        """``skos:prefLabel`` per entity, looked up in batches through ``preferred-labels.rq``."""
        found: dict[str, str] = {}
        rows = [[NamedNode(iri)] for iri in sorted(set(iris))]
        for chunk in _chunks(rows, _BATCH):
            sparql = inject_values(_named_query("preferred-labels"), ["entity"], chunk)
            for solution in self._select(sparql):
                found.setdefault(solution["entity"].value, solution["label"].value)
        return found

    def write_papers(
        self, papers: Sequence[PaperQuads], *, new: bool = False, known_labels: Labels = None
    ) -> None:
        """Merge entity triples (one POST), then replace each paper graph (one PUT each).
        ``new`` changes nothing here: a PUT is already the server's cheapest write."""
        self._check_writable()
        entity_quads = [q for p in papers for q in p.entities]
        entity_quads.extend(merge_labels(self, papers, known_labels))
        if entity_quads:
            self._post_graph(ENTITIES_GRAPH, [q.triple for q in entity_quads])
        for paper in papers:
            # The hash travels in the same PUT as the rest of the paper: the
            # server swaps the graph atomically, so the hash is never ahead of it.
            self._put_graph(paper.graph, [q.triple for q in paper.paper])

    def delete_paper(self, paper_id: str) -> bool:
        """GSP ``DELETE`` of the paper's graph; False when the server has none."""
        self._check_writable()
        graph = paper_graph(paper_id).value
        response = self._send("DELETE", self.store_url, params={"graph": graph})
        if response.status_code == 404:
            return False
        self._check(response, "delete")
        return True

    def replace_quads(self, remove: Sequence[Quad], add: Sequence[Quad], **_: object) -> None:
        """One SPARQL update: ``DELETE DATA`` then ``INSERT DATA`` (``graphs``: not needed)."""
        if remove or add:
            self.update(data_update(remove, add))

    def paper_ids(self) -> Iterator[str]:
        """Ids of every paper graph on the server."""
        for solution in self._select(_named_query("named-graphs")):
            pid = paper_id_from_graph(solution["graph"].value)
            if pid is not None:
                yield pid

    def __len__(self) -> int:
        """Quads in the named graphs (the project writes nothing to the default graph)."""
        for solution in self._select(_named_query("quad-count")):
            return int(solution["quads"].value)
        return 0

    def dump(self, output: IO[bytes], fmt: RdfFormat) -> None:
        """The dataset (GSP ``GET`` of the whole store), or the union graph for triple formats."""
        if not fmt.supports_datasets:
            # Straight from the CONSTRUCT's N-Triples: no in-memory copy of the graph.
            response = self._check(
                self._send(
                    "POST",
                    self.query_url,
                    content=_named_query("union-graph").encode("utf-8"),
                    headers={
                        "Content-Type": "application/sparql-query; charset=utf-8",
                        "Accept": _NTRIPLES,
                    },
                ),
                "dump",
            )
            triples = (q.triple for q in parse(response.content, RdfFormat.N_TRIPLES))
            serialize(triples, output, fmt, prefixes=PREFIXES)
            return
        response = self._check(
            self._send("GET", self.store_url, headers={"Accept": _NQUADS}), "dump"
        )
        media = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != _NQUADS:
            raise StoreError(
                f"the SPARQL store at {self.store_url} cannot export the whole "
                f"dataset as N-Quads (it answered {media!r})"
            )
        if fmt == RdfFormat.N_QUADS:
            output.write(response.content)
            return
        serialize(parse(response.content, RdfFormat.N_QUADS), output, fmt, prefixes=PREFIXES)

    def flush(self) -> None:
        """Nothing to do: the server made each write durable before answering."""

    # Nothing to do either: compaction and open files are the server's business.
    optimize = reopen = flush

    def native(self) -> Store | None:
        return None

    def search_index(self) -> None:
        return None  # kg.store.index.IndexedStore wraps a store to add one

    def mark_stale(self, why: str) -> None:
        """Nothing to mark: this store keeps no index."""

    def close(self) -> None:
        """Close the HTTP connections (the server keeps running)."""
        self._http.close()

    # ------------------------------------------------------------ helpers

    def ensure_ontology(self) -> None:
        """Load ``ontology/kg.ttl`` into its graph unless this version is already there."""
        source = (ontology_dir() / "kg.ttl").read_bytes()
        digest = sha256(source)
        marker = self.query(
            _named_query("ontology-marker"), substitutions={"hash": Literal(digest)}
        )
        if bool(marker):
            return
        triples = [q.triple for q in parse(source, RdfFormat.TURTLE)]
        triples.append(Triple(NamedNode(ONTOLOGY_IRI), KG.contentHash, Literal(digest)))
        self._put_graph(ONTOLOGY_GRAPH, triples)

    def _check_union_default_graph(self) -> None:
        # Take any quad of a named graph; the default graph must show its triple.
        for row in self._select(_named_query("first-quad")):
            bindings = {"s": row["s"], "p": row["p"], "o": row["o"]}
            if isinstance(bindings["s"], BlankNode) or isinstance(bindings["o"], BlankNode):
                return  # cannot be bound in VALUES; nothing to conclude
            if not bool(self.query(_named_query("triple-visible"), substitutions=bindings)):
                raise StoreError(
                    f"the default graph of the SPARQL store at {self.location} is not the union "
                    "of its named graphs; start it with `oxigraph serve --union-default-graph` "
                    "(or configure the server's union default graph)"
                )

    def _select(self, sparql: str) -> QuerySolutions:
        result = self.query(sparql)
        if not isinstance(result, QuerySolutions):
            raise StoreError("the SPARQL store did not answer a SELECT with solutions")
        return result

    def _put_graph(self, graph: NamedNode, triples: Sequence[Triple]) -> None:
        self._check(
            self._send(
                "PUT",
                self.store_url,
                params={"graph": graph.value},
                content=serialize(triples, format=RdfFormat.N_TRIPLES),
                headers={"Content-Type": _NTRIPLES},
            ),
            "graph write",
        )

    def _post_graph(self, graph: NamedNode, triples: Sequence[Triple]) -> None:
        self._check(
            self._send(
                "POST",
                self.store_url,
                params={"graph": graph.value},
                content=serialize(triples, format=RdfFormat.N_TRIPLES),
                headers={"Content-Type": _NTRIPLES},
            ),
            "graph merge",
        )

    def _check_writable(self) -> None:
        if self.read_only:
            raise StoreError(f"the store at {self.location} is open read-only")


def _as_query_triples(data: bytes, fmt: RdfFormat) -> QueryResult:
    # pyoxigraph cannot build a QueryTriples from Python; a CONSTRUCT over an
    # in-memory copy of the answer gives one, with the same triples.
    scratch = Store()
    scratch.load(data, fmt)
    return scratch.query(_named_query("union-graph"))


def _chunks(rows: list, size: int) -> Iterator[list]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


# ------------------------------------------------------------ VALUES injection

_VARNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def inject_values(sparql: str, variables: Sequence[str], rows: Sequence[Sequence[Term]]) -> str:
    """``sparql`` with ``VALUES (?v…) { (t…) … }`` opening each group of its WHERE clause.

    The block goes at the start of the top-level WHERE group and of every group
    nested in it (``OPTIONAL``, ``UNION`` branches, ``GRAPH``, ``FILTER EXISTS``,
    sub-``SELECT``s): SPARQL evaluates groups bottom-up, so a ``FILTER`` inside a
    ``UNION`` branch would not see a binding made only at the top, while
    pyoxigraph's substitutions bind the variable everywhere. Joining the same
    rows into every group gives the same answers.

    Terms must be pyoxigraph ``NamedNode``/``Literal`` objects and are written
    as escaped N-Triples, so no caller text is ever spliced in raw.
    """
    for name in variables:
        if not _VARNAME.match(name):
            raise ValueError(f"not a SPARQL variable name: {name!r}")
    lines = []
    for row in rows:
        if len(row) != len(variables):
            raise ValueError("each VALUES row needs one term per variable")
        for term in row:
            if not isinstance(term, NamedNode | Literal):
                raise TypeError(f"only IRIs and literals can be bound, not {type(term).__name__}")
        lines.append("(" + " ".join(str(t) for t in row) + ")")
    head = "(" + " ".join("?" + v for v in variables) + ")"
    block = f" VALUES {head} {{ {' '.join(lines)} }} "
    top, groups, close, top_is_subselect = _where_groups(sparql)
    edits = [(at + 1, block) for at in groups]
    if top_is_subselect:
        # A group holding a sub-SELECT may hold nothing else: nest it.
        edits += [(top + 1, block + "{ "), (close, " }")]
    out = []
    last = 0
    for at, text in sorted(edits, key=lambda e: e[0]):
        out.append(sparql[last:at])
        out.append(text)
        last = at
    out.append(sparql[last:])
    return "".join(out)


def _tokens(sparql: str) -> Iterator[tuple[int, str]]:
    """Offsets and text of the braces and keywords (upper case) of a query; comments,
    strings, IRIs and variables are skipped by :func:`kg.sparql_text.tokens`."""
    for token in tokens(sparql):
        if token.kind == "word":
            yield token.start, token.text.upper()
        elif token.text in ("{", "}"):
            yield token.start, token.text


def _where_groups(sparql: str) -> tuple[int, list[int], int, bool]:
    """Where the WHERE clause's groups open.

    Returns the offsets of the top-level group's ``{`` and ``}``, the offsets of
    every ``{`` that may take a VALUES block (not data blocks, not groups that
    hold a sub-SELECT), and whether the top-level group holds a sub-SELECT.
    """
    form: str | None = None
    previous = ""
    groups_at_top = 0
    depth = 0
    top = -1
    opened: list[int] = []  # groups awaiting their first token
    targets: list[int] = []
    top_is_subselect = False
    for at, token in _tokens(sparql):
        for brace in opened:
            if token == "SELECT":
                top_is_subselect = top_is_subselect or brace == top
            else:
                targets.append(brace)
        opened = []
        if token == "{":
            if depth == 0:
                groups_at_top += 1
                # CONSTRUCT's first group is its template, unless it is the
                # short form CONSTRUCT WHERE { … }, which has no separate pattern.
                if form == "CONSTRUCT" and groups_at_top == 1 and previous == "WHERE":
                    raise ValueError(
                        "bindings need CONSTRUCT { … } WHERE { … }, "
                        "not the short form CONSTRUCT WHERE { … }"
                    )
                if top < 0 and not (form == "CONSTRUCT" and groups_at_top == 1):
                    top = at
            if top >= 0 and previous != "VALUES":  # a VALUES data block is not a group
                opened.append(at)
            depth += 1
        elif token == "}":
            depth -= 1
            if depth == 0 and top >= 0:
                return top, targets, at, top_is_subselect
        elif depth == 0 and form is None and token in ("SELECT", "CONSTRUCT", "ASK", "DESCRIBE"):
            form = token
        previous = token
    raise ValueError("the query has no WHERE group to bind values in")
