"""The one entity resolver: what IRI a filter, a focus or a search box names.

A value may be an absolute IRI; ``type/key`` (``task/unlearning``); a key of a
type, as given or as the extractor would canonicalise it (``Machine
Unlearning`` finds ``machine-unlearning``); or a label or alias, ignoring case.
Keys become IRIs through :func:`kg.vocab.entity_iri`, which percent-encodes
them like the mapping does.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from pyoxigraph import NamedNode

from kg import schema
from kg.extraction.canonical import canonical_key  # spaCy-free: the extractor's key rule
from kg.read.base import TYPES, ReadError, check_text, first, is_absolute
from kg.store.embedded import GraphStore
from kg.vocab import ID_PREFIX, entity_iri, paper_iri

_TYPED_KEY = re.compile(
    r"^(" + "|".join(re.escape(k.segment) for k in schema.ENTITY_TYPES) + r")/(.+)$",
    re.IGNORECASE,
)


def key_candidates(value: str, types: list[str]) -> list[str]:
    """Entity IRIs a non-IRI value may name (of these URL-segment types), most likely first."""
    typed = _TYPED_KEY.match(value)
    if typed and typed[1].lower() in types:
        types, keys = [typed[1].lower()], [typed[2]]
    else:
        keys = [value]
    keys.append(canonical_key(keys[0]))
    out: list[str] = []
    for t in types:
        for key in keys:
            iri = entity_iri(schema.kind(t).name, key)
            if key and iri not in out:
                out.append(iri)
    return out


def key_guesses(value: str, type_name: str) -> list[str]:
    """IRIs worth trying directly for one filter (no look-ups)."""
    value = value.strip()
    if is_absolute(value):
        try:
            return [NamedNode(value).value]
        except ValueError:
            return []  # resolve_entity reports it
    return key_candidates(value, [type_name]) if value else []


def resolve_entity(
    store: GraphStore, value: str, *, type_name: str | None, parameter: str
) -> str | None:
    """The IRI an entity filter names, or None when the graph has no such entity.

    Tried in order: an absolute IRI; ``type/key``; a key of the given type (as
    given, then canonicalised); a label or alias of the given type (or of any
    type when none is given), ignoring case.
    """
    value = check_text(parameter, value) or ""
    if is_absolute(value):
        try:
            NamedNode(value)
        except ValueError:
            raise ReadError(parameter, "is not a valid IRI") from None
        return value
    types = [type_name] if type_name else list(TYPES)
    for iri in key_candidates(value, types):
        if first(store, "entity", entity=iri) is not None:
            return iri
    # A label as written is an index lookup; any other case needs a scan of labels.
    for query in ("entity-by-exact-label", "entity-by-label"):
        for t in types:
            hit = first(store, query, type=TYPES[t], label=value)
            if hit is not None:
                return hit["entity"].value
    return None


def focus_candidates(value: str) -> list[str]:
    """IRIs a graph focus may name, most likely first: an absolute IRI as given;
    else ``paper/ID`` or ``type/key``, a paper id, or an entity key of any type
    (as given, then canonicalised)."""
    value = value.strip()
    if not value:
        return []
    if is_absolute(value):
        return [value]
    out = [ID_PREFIX + quote(value, safe="/-._~"), paper_iri(value).value]
    out.extend(iri for iri in key_candidates(value, list(TYPES)) if iri not in out)
    return out
