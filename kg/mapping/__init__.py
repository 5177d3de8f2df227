"""RDF mapping: extracted papers become quads under the ontology."""
