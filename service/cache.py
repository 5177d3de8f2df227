"""Recent /sparql results, per server process (:class:`ResultCache`)."""

from __future__ import annotations

from collections import OrderedDict

from service.messages import QueryRequest


class ResultCache:
    """Recent query results, keyed by everything that determines them — the request
    and the store generation — so a write makes every older entry unreachable.

    Repeated small lookups (an explorer page, a dashboard) are answered without
    a worker round trip. Only successful results up to ``max_bytes`` are kept."""

    def __init__(self, entries: int, max_bytes: int = 256 * 1024) -> None:
        self.entries = entries
        self.max_bytes = max_bytes
        self._data: OrderedDict[tuple, tuple[str, bytes]] = OrderedDict()

    @staticmethod
    def key(generation: int, request: QueryRequest) -> tuple:
        """The cache key of a request at a store generation."""
        return request.cache_key(generation)

    def get(self, key: tuple) -> tuple[str, bytes] | None:
        """The cached (media type, body), or None."""
        found = self._data.get(key)
        if found is not None:
            self._data.move_to_end(key)
        return found

    def put(self, key: tuple, media_type: str, body: bytes) -> None:
        """Remember a result (small ones only), evicting the least recently used."""
        if self.entries <= 0 or len(body) > self.max_bytes:
            return
        self._data[key] = (media_type, body)
        self._data.move_to_end(key)
        while len(self._data) > self.entries:
            self._data.popitem(last=False)
