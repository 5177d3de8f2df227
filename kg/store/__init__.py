"""Storage and queries: graph stores behind one interface, the named queries,
the search/aggregate index and what is derived in the store at ingest."""
