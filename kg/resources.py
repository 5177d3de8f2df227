"""Where the project's data files live, installed or in a checkout.

The ontology and the named queries sit at the top of the repository (the design
card's layout); a wheel carries them inside the package as ``kg/_resources``.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    for candidate in (_PACKAGE / "_resources" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"cannot find the project's {name}/ directory")


def ontology_dir() -> Path:
    """The directory holding ``kg.ttl`` and ``shapes.ttl``."""
    return _find("ontology")


def queries_dir() -> Path:
    """The directory holding the named SPARQL queries (``*.rq``)."""
    return _find("queries")


def sample_corpus() -> list[Path]:
    """The bundled ICLR 2026 sample corpus, in a stable order."""
    return sorted((_PACKAGE / "data" / "seeds").glob("*.txt"))
