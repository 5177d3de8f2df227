"""A knowledge graph of machine-learning research built from paper abstracts.

Data flows one way: :mod:`kg.reading` → :mod:`kg.extraction` → :mod:`kg.mapping.papers`
→ :mod:`kg.store.embedded` → :mod:`kg.read`, with :mod:`service` serving the store over HTTP.
"""

__version__ = "0.1.0"
