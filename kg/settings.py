"""Service settings: one declarative dataclass, filled from ``KG_*`` environment
variables, from which ``kg serve`` derives its flags.

Each field says once what it is: its default, its docstring, and in its
metadata the ``kg serve`` flag (if any) and the flag's help. ``kg serve`` turns
its flags into the same environment variables before it starts uvicorn, so every
uvicorn worker process builds identical settings with :meth:`Settings.from_env`
(a worker cannot receive Python objects from the parent). The README's
configuration table documents every field (a test checks it).

It lives in the library, not in :mod:`service`, because the CLI (``kg serve``)
reads it and ``kg`` never imports ``service``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import Field as DataclassField
from dataclasses import dataclass, field, fields
from typing import Any

from kg.reading.jsonlimits import DEFAULT_MAX_DEPTH as DEFAULT_MAX_JSON_DEPTH
from kg.store.common import DEFAULT_STORE


def _split(value: str) -> tuple[str, ...]:
    """Split a comma- or whitespace-separated list."""
    return tuple(part for part in value.replace(",", " ").split() if part)


def _bool(value: str) -> bool:
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _flag(default: Any, flag: str, help: str) -> Any:
    """A setting that ``kg serve`` also takes as ``flag``."""
    return field(default=default, metadata={"flag": flag, "help": help})


def _convert(default: Any, raw: str) -> Any:
    """A variable's text as the type of the setting's default."""
    if isinstance(default, bool):
        return _bool(raw)
    if isinstance(default, int):
        return int(raw)
    if isinstance(default, float):
        return float(raw)
    if isinstance(default, tuple):
        return _split(raw)
    return raw


@dataclass(frozen=True)
class Settings:
    """Everything the service needs to know at start-up."""

    host: str = _flag("127.0.0.1", "--host", "Interface to listen on.")
    """Interface to listen on (``KG_HOST``)."""
    port: int = _flag(8000, "--port", "TCP port.")
    """TCP port (``KG_PORT``)."""
    store: str = _flag(
        str(DEFAULT_STORE), "--store", "Store directory, or http(s):// URL of a SPARQL 1.1 store."
    )
    """Store directory or ``http(s)://`` URL of a remote SPARQL store (``KG_STORE``)."""
    workers: int = _flag(1, "--workers", "uvicorn processes; >1 opens an embedded store read-only.")
    """uvicorn worker processes (``KG_WORKERS``); more than one opens an embedded
    store read-only, so writes are disabled."""
    update_token: str | None = _flag(
        None, "--update-token", "Bearer token enabling writes; unset = read-only."
    )
    """Bearer token that enables writes (``KG_UPDATE_TOKEN``); unset = read-only."""
    query_timeout: float = _flag(
        10.0, "--query-timeout", "Seconds before a SPARQL query is stopped."
    )
    """Seconds a SPARQL query may run before it is killed (``KG_QUERY_TIMEOUT``)."""
    result_limit: int = _flag(100_000, "--result-limit", "Most rows/triples one query may return.")
    """Most rows (SELECT) or triples (CONSTRUCT/DESCRIBE) one query may return
    (``KG_RESULT_LIMIT``); more is a 413, never a truncated result."""
    query_cache: int = 1024
    """Recent /sparql results kept per process (``KG_QUERY_CACHE``; 0 disables).
    Entries are keyed by the store generation, so a write invalidates them all."""
    max_request_bytes: int = 16 * 1024 * 1024
    """Largest body /sparql, /sparql/update, /store and POST /papers accept
    (``KG_MAX_REQUEST_BYTES``), checked while the body streams."""
    graph_max_papers: int = 20_000
    """Largest store (in papers) whose whole graph ``GET /graph`` draws without a
    ``focus`` (``KG_GRAPH_MAX_PAPERS``); larger is a 413 naming ``focus``."""
    graph_focus_limit: int = 100
    """Nodes a ``focus`` neighbourhood of ``GET /graph`` keeps when the request
    gives no ``limit`` (``KG_GRAPH_FOCUS_LIMIT``), as ``/entities/…`` lists 100
    papers: the star of a common entity grows with the corpus (441 papers
    around one method at 100k papers), the response says when the limit cut it,
    and ``limit`` asks for more (the explorer asks for 500)."""
    graph_max_nodes: int = 50_000
    """Most nodes a ``focus`` neighbourhood may reach before ``GET /graph``
    refuses it with a 413 (``KG_GRAPH_MAX_NODES``)."""
    query_workers: int = _flag(2, "--query-workers", "Query processes per uvicorn worker.")
    """Processes that evaluate /sparql queries on an embedded store (``KG_QUERY_WORKERS``)."""
    slow_queries: int = 1
    """Queries that may run past ``query_budget`` at once (``KG_SLOW_QUERIES``). The pool
    keeps this many workers beyond ``query_workers``, so slow queries never hold every
    worker; a query that passes the budget when they are all taken is stopped (503)."""
    query_budget: float = 0.5
    """Seconds after which a running query counts as slow (``KG_QUERY_BUDGET``)."""
    query_queue: int = 64
    """Queries that may wait for a worker (``KG_QUERY_QUEUE``); more is a 503 with
    ``Retry-After``."""
    max_concurrent_requests: int = 0
    """REST, page, export and write requests the web process works on at once
    (``KG_MAX_CONCURRENT_REQUESTS``; 0 = twice the CPUs). SPARQL queries are
    bounded by ``query_workers`` and ``query_queue`` instead."""
    request_queue: int = 32
    """Such requests that may wait for one of those slots (``KG_REQUEST_QUEUE``);
    more is a 503 ``overloaded`` with ``Retry-After``."""
    request_max_wait: float = 0.1
    """Longest likely wait, in seconds, for one of those slots or for a query
    worker, judged by how long recent requests took (``KG_REQUEST_MAX_WAIT``): a
    request or query that would likely wait longer is refused at once (503
    ``overloaded`` with ``Retry-After``) rather than queued, so what is admitted
    stays fast under overload."""
    update_timeout: float = 10.0
    """Seconds a SPARQL update with a WHERE clause, or the parsing of a Graph Store
    body, may take (``KG_UPDATE_TIMEOUT``); past it nothing is written (503)."""
    snapshot_interval: float = 0.5
    """Seconds between the checkpoints that publish writes to the query workers
    (``KG_SNAPSHOT_INTERVAL``): the writes in between share one, and a write is
    answered once it is published (so under a stream of writes a write waits up
    to about this long; a lone write is published at once). Each checkpoint
    makes every worker reopen the store: at 0.2 s a steady stream of writes
    cost queries a third of their throughput and most of their tail latency."""
    manifest_limit: int = 512 * 1024
    """Bytes of RocksDB MANIFEST past which the web process reopens its store
    between two checkpoints (``KG_MANIFEST_LIMIT``): every checkpoint copies the
    file and every query worker replays it when it opens one, and it grows by a
    few kB per checkpoint until the store is opened again."""
    max_query_depth: int = 128
    """Deepest nesting a query or update may have (``KG_MAX_QUERY_DEPTH``); deeper is a
    400, checked before the engine (which would overflow its stack)."""
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH
    """Deepest nesting of a JSON request body (``KG_MAX_JSON_DEPTH``); deeper is a 400."""
    cors_origins: tuple[str, ...] = _flag(
        ("*",), "--cors-origin", "Origin allowed by CORS (repeatable; default any)."
    )
    """Origins allowed by CORS (``KG_CORS_ORIGINS``, comma-separated; empty = no CORS)."""
    cors_methods: tuple[str, ...] = ("GET",)
    """Methods allowed cross-origin (``KG_CORS_METHODS``)."""
    service_allowlist: tuple[str, ...] = _flag(
        (), "--allow-service", "IRI SPARQL SERVICE/LOAD may name (repeatable)."
    )
    """IRIs that SPARQL ``SERVICE`` and ``LOAD`` may name (``KG_SERVICE_ALLOWLIST``).
    An entry ending in ``/`` or ``#`` also allows every IRI under it."""
    read_only: bool = False
    """Force the store read-only even with a token (``KG_READ_ONLY``); set by
    ``kg serve --workers N`` with N > 1."""
    log_level: str = "info"
    """Level of the service's JSON log (``KG_LOG_LEVEL``)."""
    store_query_url: str | None = None
    """A remote store's query endpoint (``KG_STORE_QUERY_URL``; default ``URL/query``)."""
    store_update_url: str | None = None
    """A remote store's update endpoint (``KG_STORE_UPDATE_URL``; default ``URL/update``)."""
    store_gsp_url: str | None = None
    """A remote store's Graph Store Protocol endpoint (``KG_STORE_GSP_URL``; default
    ``URL/store``)."""
    store_timeout: float = 60.0
    """Seconds every request to a remote store may take (``KG_STORE_TIMEOUT``)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Room for settings of routers owned elsewhere."""

    @property
    def writable(self) -> bool:
        """Writes are possible: a token is configured and the store is not forced read-only."""
        return bool(self.update_token) and not self.read_only

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from ``KG_<NAME>`` variables; keyword arguments win over them."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name == "extra":
                continue
            raw = env.get("KG_" + f.name.upper())
            if raw is None or raw == "":
                continue
            values[f.name] = _convert(f.default, raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        settings = cls(**values)
        settings.validate()
        return settings

    def to_env(self) -> dict[str, str]:
        """The ``KG_*`` variables that rebuild these settings in another process."""
        env: dict[str, str] = {}
        for f in fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if value is None:
                continue
            if isinstance(value, bool):
                env["KG_" + f.name.upper()] = "1" if value else "0"
            elif isinstance(value, tuple):
                env["KG_" + f.name.upper()] = ",".join(value)
            else:
                env["KG_" + f.name.upper()] = str(value)
        return env

    @classmethod
    def one(cls, name: str, environ: Mapping[str, str] | None = None) -> Any:
        """One setting from its variable (or its default), without the others: for
        code that needs a single value, such as the remote store's endpoints."""
        setting = next(f for f in fields(cls) if f.name == name)
        env = os.environ if environ is None else environ
        raw = env.get(env_name(setting))
        if raw is None or raw == "":
            return setting.default
        return _convert(setting.default, raw)

    def validate(self) -> None:
        """Reject settings that cannot work, with a message naming the setting."""
        if self.query_timeout <= 0:
            raise ValueError("query_timeout must be positive")
        if self.result_limit < 1:
            raise ValueError("result_limit must be at least 1")
        if self.workers < 1 or self.query_workers < 1:
            raise ValueError("workers and query_workers must be at least 1")
        if self.update_token is not None and len(self.update_token) < 8:
            raise ValueError("update_token must be at least 8 characters")
        if self.slow_queries < 0 or self.query_queue < 0:
            raise ValueError("slow_queries and query_queue must not be negative")
        if self.query_budget <= 0 or self.update_timeout <= 0:
            raise ValueError("query_budget and update_timeout must be positive")
        if self.snapshot_interval < 0:
            raise ValueError("snapshot_interval must not be negative")
        if self.manifest_limit < 16 * 1024:
            raise ValueError("manifest_limit must be at least 16384 bytes")
        if self.max_query_depth < 8 or self.max_json_depth < 4:
            raise ValueError("max_query_depth must be at least 8 and max_json_depth at least 4")


def env_name(setting: DataclassField[Any]) -> str:
    """The environment variable of a setting (``KG_QUERY_TIMEOUT``)."""
    return "KG_" + setting.name.upper()


def flagged() -> list[DataclassField[Any]]:
    """The settings ``kg serve`` takes as flags, in declaration order."""
    return [f for f in fields(Settings) if "flag" in f.metadata]
