"""Extraction: abstracts in, :class:`~kg.model.PaperExtraction` out.

``Extractor`` runs the spaCy pipeline (see :mod:`kg.extraction.components`)
over a stream of records; ``extract_batch`` is the same for a distributed
engine. ``EXTRACTOR_VERSION`` changes whenever the output would.
"""

from kg.extraction.extractor import EXTRACTOR_VERSION, Extractor, build_pipeline, extract_batch

__all__ = ["EXTRACTOR_VERSION", "Extractor", "build_pipeline", "extract_batch"]
