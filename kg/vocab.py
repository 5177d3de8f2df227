"""The vocabulary: every IRI the code writes, in one place.

``KG`` mirrors ``ontology/kg.ttl``; ``tests/test_vocab.py`` checks that each term
here is defined there (with a label and a comment) and that the ontology has no
term this module lacks. Asking ``KG`` for an unknown term raises.
"""

from __future__ import annotations

from urllib.parse import quote

from pyoxigraph import NamedNode

from kg import schema

BASE = "https://w3id.org/mlkg/"
ONTOLOGY_IRI = BASE + "ontology"
ONTOLOGY_GRAPH = NamedNode(BASE + "graph/ontology")
ENTITIES_GRAPH = NamedNode(BASE + "graph/entities")
PAPER_GRAPH_PREFIX = BASE + "graph/paper/"
ID_PREFIX = BASE + "id/"


class _Namespace:
    """A closed namespace: attribute access for known terms only."""

    def __init__(self, iri: str, terms: tuple[str, ...]) -> None:
        self.iri = iri
        self.terms = frozenset(terms)
        self._nodes = {t: NamedNode(iri + t) for t in terms}
        # As instance attributes, terms are found without calling __getattr__
        # (mapping and indexing read them millions of times per corpus).
        clash = self._nodes.keys() & {"iri", "terms", "_nodes"}
        assert not clash, f"terms shadow the namespace's own attributes: {clash}"
        self.__dict__.update(self._nodes)

    def __getattr__(self, name: str) -> NamedNode:
        try:
            return self._nodes[name]
        except KeyError:
            raise AttributeError(f"{self.iri}{name} is not a term of this vocabulary") from None

    def __getitem__(self, name: str) -> NamedNode:
        return self.__getattr__(name)


KG = _Namespace(
    "https://w3id.org/mlkg/ontology#",
    (
        # classes
        "Paper",
        schema.ENTITY_CLASS,
        *(k.name for k in schema.ENTITY_TYPES),
        "Claim",
        "ClaimKind",
        "Quantity",
        "Sentence",
        "Mention",
        "ExtractorComponent",
        # claim kinds
        *(c.term for c in schema.CLAIM_KIND_SPECS),
        # paper → entity
        schema.ENTITY_PROPERTY,
        *(r.name for _, r in schema.relations()),
        "makesClaim",
        # claims
        "claimAbout",
        "claimValue",
        "claimMetric",
        "claimDataset",
        "claimKind",
        "comparedTo",
        "numericValue",
        "unit",
        "valueText",
        # spans and provenance
        "text",
        "start",
        "end",
        "inPaper",
        "inSentence",
        "denotes",
        "evidence",
        "confidence",
        "extractorVersion",
        "contentHash",
        "venue",
        "sourceFile",
        "sourceId",
        # results
        "Result",
        "reportsResult",
        "resultValue",
        "resultMetric",
        "resultDataset",
        "resultTask",
        "resultMethod",
        "fromClaim",
        "isProposed",
        "isRelative",
        "higherIsBetter",
        # method taxonomy
        "TaxonomyStatement",
        "cue",
        # corpus-level consolidation
        "SurfaceForm",
        "AcronymDefinition",
        "TypeEvidence",
        "surfaceKey",
        "surfaceType",
        "surfaceAlias",
        "resolvedTo",
        "shortForm",
        "longForm",
        "typeEvidence",
        "evidenceClass",
        "paperCount",
        "weight",
    ),
)

RDF = _Namespace(
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    ("type", "Statement", "subject", "predicate", "object"),
)
RDFS = _Namespace("http://www.w3.org/2000/01/rdf-schema#", ("label", "comment"))
SKOS = _Namespace(
    "http://www.w3.org/2004/02/skos/core#",
    ("prefLabel", "altLabel", "notation", "broader", "narrower"),
)
DCTERMS = _Namespace(
    "http://purl.org/dc/terms/", ("title", "abstract", "identifier", "creator", "subject")
)
PROV = _Namespace("http://www.w3.org/ns/prov#", ("wasAttributedTo", "hadPrimarySource"))
SCHEMA = _Namespace("https://schema.org/", ("keywords", "url", "datePublished"))
XSD = _Namespace(
    "http://www.w3.org/2001/XMLSchema#", ("string", "integer", "double", "gYear", "boolean")
)

PREFIXES: dict[str, str] = {
    "kg": KG.iri,
    "rdf": RDF.iri,
    "rdfs": RDFS.iri,
    "skos": SKOS.iri,
    "dcterms": DCTERMS.iri,
    "prov": PROV.iri,
    "schema": SCHEMA.iri,
    "xsd": XSD.iri,
    "owl": "http://www.w3.org/2002/07/owl#",
}

CLAIM_KINDS = {c.name: KG[c.term] for c in schema.CLAIM_KIND_SPECS}
"""Claim kind name (``performance``) → its ontology individual."""


def _segment(value: str) -> str:
    # IRIs must stay valid for any id a source gives us; percent-encode all but
    # the unreserved characters so a hostile id cannot break out of the IRI.
    return quote(value, safe="-._~")


def paper_iri(paper_id: str) -> NamedNode:
    """The IRI of a paper."""
    return NamedNode(f"{ID_PREFIX}paper/{_segment(paper_id)}")


def paper_graph(paper_id: str) -> NamedNode:
    """The named graph holding one paper's statements."""
    return NamedNode(PAPER_GRAPH_PREFIX + _segment(paper_id))


def entity_iri(type_name: str, key: str) -> str:
    """The IRI of a research entity of a type (``Task``…) with a canonical key."""
    return f"{ID_PREFIX}{type_name.lower()}/{_segment(key)}"


def component_iri(name: str) -> NamedNode:
    """The IRI of an extractor component (a ``prov:SoftwareAgent``)."""
    return NamedNode(f"{ID_PREFIX}component/{_segment(name)}")


def paper_id_from_graph(graph: str) -> str | None:
    """The paper id behind a paper graph IRI, or None for other graphs."""
    if not graph.startswith(PAPER_GRAPH_PREFIX):
        return None
    from urllib.parse import unquote

    return unquote(graph[len(PAPER_GRAPH_PREFIX) :])
