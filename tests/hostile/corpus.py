"""The hostile-input corpus: inputs that broke or could break the service, each
with the answer it must get. Large inputs are generated here rather than stored,
so the corpus stays small in the repository."""

from __future__ import annotations

N = 5000  # deep enough to overflow the engine's stack without the depth check


def nested_groups(n: int = N) -> str:
    """The issue's query: ``{`` nested ``n`` deep."""
    return "SELECT * WHERE { " + "{ " * n + "?s ?p ?o" + " }" * n + " }"


def nested_update(n: int = N) -> str:
    """The issue's update that killed the web server (segfault, exit 139)."""
    return "INSERT {<urn:a> <urn:b> <urn:c>} WHERE { " + "{ " * n + "?s ?p ?o" + " }" * n + " }"


# Queries past the depth limit: each one crashed pyoxigraph 0.5 (stack overflow)
# at the size used here, in a worker or in the web process.
DEEP_QUERIES = {
    "nested-groups": nested_groups(),
    "nested-brackets-escaped": "SELECT * WHERE { "
    + "\\u007B " * N
    + "?s ?p ?o"
    + " \\u007D" * N
    + " }",
    "nested-parentheses": "SELECT * WHERE { ?s ?p ?o FILTER(" + "(" * N + "1" + ")" * N + ") }",
    "nested-blank-nodes": "ASK { ?s ?p " + "[ ?p " * 300 + "?o" + " ]" * 300 + " }",
    "nested-collections": "ASK { ?s ?p " + "( " * 300 + "1" + " )" * 300 + " }",
    "optional-chain": "SELECT * {" + " OPTIONAL {?s ?p ?o}" * N + "}",
    "union-chain": "SELECT * {" + " UNION ".join(["{?s ?p ?o}"] * 50_000) + "}",
    "path-sequence": "ASK { ?s " + "/".join(["<urn:p>"] * 1000) + " ?o }",
    "not-chain": "ASK { FILTER(" + "!" * 50_000 + "true) }",
    "or-chain": "ASK { FILTER(" + " || ".join(["true"] * 50_000) + ") }",
    "plus-chain": "SELECT (" + "+".join(["1"] * 50_000) + " AS ?x) {}",
}

DEEP_UPDATES = {
    "nested-groups": nested_update(),
    "nested-data": "INSERT DATA { <urn:a> <urn:b> " + "[ <urn:p> " * 400 + "1" + " ]" * 400 + " }",
    "delete-where-chain": "DELETE WHERE {" + " OPTIONAL {?s ?p ?o}" * N + "}",
}

# Queries that look deep to a naive counter but are not: they must still work.
NOT_DEEP = {
    "brackets-in-strings": 'SELECT * WHERE { ?s ?p ?o FILTER(?o != "'
    + "{(" * 5000
    + '") } LIMIT 1',
    "brackets-in-comments": "# " + "{" * 5000 + "\nASK { ?s ?p ?o }",
    "slashes-in-iris": "ASK { ?s ?p <http://example.org/" + "a/" * 2000 + "> }",
    "many-triples": "ASK { " + " ".join(f"<urn:s> <urn:p{i}> ?o{i} ." for i in range(300)) + " }",
}

# JSON bodies of POST /papers: (body, status). The good record's shape is in the tests.
DEEP_JSON = {
    "deep-array": b"[" * 100_000 + b"]" * 100_000,
    "deep-object": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    "deep-inside-record": b'[{"abstract": "x", "extra": ' + b"[" * 1000 + b"]" * 1000 + b"}]",
}

# RDF bodies of PUT /store.
ENTITY_BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE r [
<!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
<!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
<!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">
<!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">
<!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;">
<!ENTITY h "&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;">
]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://example.org/">
  <rdf:Description rdf:about="http://example.org/s"><ex:p>&h;</ex:p></rdf:Description>
</rdf:RDF>
"""

RDF_BODIES = {
    "entity-bomb": ("application/rdf+xml", ENTITY_BOMB, 400),
    "entity-bomb-utf16": ("application/rdf+xml", ENTITY_BOMB.decode().encode("utf-16-le"), 400),
    "one-small-entity": (
        "application/rdf+xml",
        b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "x">]>'
        b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/>',
        400,
    ),
    "not-rdf": ("text/turtle", b"<a> <b> ", 400),
    "plain-rdfxml": (
        "application/rdf+xml",
        b'<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"'
        b' xmlns:ex="http://example.org/"><rdf:Description rdf:about="http://example.org/s">'
        b"<ex:p>fine</ex:p></rdf:Description></rdf:RDF>",
        201,
    ),
}
