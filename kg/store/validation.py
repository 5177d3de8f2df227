"""SHACL validation of a store against ``ontology/shapes.ttl`` (pyshacl).

The data graph is the union of all graphs, ontology included, so ``sh:class``
sees the ontology's subclass axioms (a ``kg:Task`` is a ``kg:ResearchEntity``).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from pyoxigraph import RdfFormat

from kg.resources import ontology_dir
from kg.store.embedded import GraphStore


@dataclass
class ValidationResult:
    """Violations as one line each, and the size of what was validated."""

    violations: list[str]
    triples: int

    @property
    def conforms(self) -> bool:
        """True when there is no violation."""
        return not self.violations


def validate_store(store: GraphStore) -> ValidationResult:
    """Validate the union of the store's graphs against the project's shapes."""
    import rdflib
    from pyshacl import validate

    buffer = io.BytesIO()
    store.dump(buffer, RdfFormat.N_TRIPLES)
    data = rdflib.Graph()
    data.parse(data=buffer.getvalue(), format="nt")
    shapes = rdflib.Graph().parse(ontology_dir() / "shapes.ttl", format="turtle")
    _, report, _ = validate(data, shacl_graph=shapes, inference="none", advanced=True)
    sh = rdflib.Namespace("http://www.w3.org/ns/shacl#")
    lines = []
    for result in report.subjects(rdflib.RDF.type, sh.ValidationResult):
        focus = report.value(result, sh.focusNode)
        path = report.value(result, sh.resultPath)
        message = report.value(result, sh.resultMessage)
        lines.append(f"{focus} {path or ''}: {message}")
    return ValidationResult(sorted(lines), len(data))
