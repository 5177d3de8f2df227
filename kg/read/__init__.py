"""The read model: the graph's papers, entities and claims as the JSON the REST
API, the HTML pages, graph views and the CLI share.

Every value from a client reaches SPARQL only as a substitution through
:mod:`kg.store.queries`; a value that does not fit is a :class:`ReadError` naming the
parameter (the service answers it with a 422). Nothing here knows about HTTP:
lists return their total and items, and the caller adds its paging links.

:mod:`kg.read.base`
    running named queries, RDF terms as JSON values, entity and paper references.
:mod:`kg.read.resolve`
    the one entity resolver (IRI, ``type/key``, key, label or alias).
:mod:`kg.read.papers`
    paper lists and details, claims.
:mod:`kg.read.entities`
    entity lists, details and search.
"""

from kg.read.base import ReadError

__all__ = ["ReadError"]
