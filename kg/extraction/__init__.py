"""Extraction: abstracts in, :class:`~kg.model.PaperExtraction` out."""
