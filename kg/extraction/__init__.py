"""Extraction: abstracts in, :class:`~kg.model.PaperExtraction` out.

``Extractor`` runs the spaCy pipeline (see :mod:`kg.extraction.components`)
over a stream of records; ``extract_batch`` is the same for a distributed
engine. ``EXTRACTOR_VERSION`` changes whenever the output would.

The names are imported on first use: the spaCy-free modules of this package
(:mod:`kg.extraction.canonical`, the patterns) must not load spaCy into
processes that only read the graph, such as the web service.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["EXTRACTOR_VERSION", "Extractor", "build_pipeline", "extract_batch"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        where = "pipeline" if name == "build_pipeline" else "extractor"
        module = importlib.import_module(f"kg.extraction.{where}")
        return getattr(module, name)
    raise AttributeError(f"module 'kg.extraction' has no attribute {name!r}")
