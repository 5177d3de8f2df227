"""A bounded soak of one real server: mixed REST, SPARQL queries, updates and
slow queries at a fixed concurrency, then the store's integrity.

    python benchmarks/soak.py                               # 10 minutes, c=32
    python benchmarks/soak.py --duration 60 --store STORE   # a short run on a copy of STORE
    python benchmarks/soak.py --timeline tl.jsonl           # also every probe and warning, timed

Starts ``kg serve`` (update token set) on a private copy of the store (without
``--store``: the bundled sample, ingested first). The clients, closed loop:

- 2 send slow queries (three-way cross products; 503s are expected and counted apart);
- 3 send updates: ``INSERT DATA`` / ``DELETE DATA`` of soak triples, and an update
  with a ``WHERE`` clause (it runs a trial first);
- 12 send fast SPARQL queries (lookups, counts, ASK), 15 send REST requests;
- ``/health`` is sampled once a second by the clients' event loop (``health``);
- a process of its own alternates ``/health`` and a fast query (``ASK``, a new
  comment each time so the result cache never answers) every 0.25 s (``health
  probe``, ``sparql fast probe``): on a busy machine the 32 clients' event loop
  queues responses itself, and these figures do not include that. The server and
  the clients run at nice +10 and the probe at the priority the script started
  with, as a user on another machine would be: the probe's own process does not
  wait for a CPU behind the load generator, its requests queue in the server.

A client that gets a 503 waits as its ``Retry-After`` says before its next
request, as a well-behaved client does (``--ignore-retry-after``: at once).

Reports one JSON object: requests and errors per endpoint (an error is a 5xx
other than the documented 503s of admission control, or a transport failure),
p50/p99 per endpoint, the server's RSS (process tree) over time, and at the end
whether every acknowledged write is in the store (and nothing else), the paper
count is unchanged and ``kg validate`` passes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from multiprocessing.connection import Connection
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks._proc import prepare_store, tree_pids, tree_rss_mb  # noqa: E402
from tests.helpers import running_server  # noqa: E402

TOKEN = "soak-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SOAK_GRAPH = "urn:soak:graph"
SLOW = [
    "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }",
    "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f FILTER(STR(?c) < STR(?f)) }",
]
FAST = [
    "ASK { ?s ?p ?o }",
    "SELECT ?p (COUNT(*) AS ?n) WHERE { ?p a <https://w3id.org/mlkg/ontology#Paper> } "
    "GROUP BY ?p LIMIT 5",
    "PREFIX kg: <https://w3id.org/mlkg/ontology#> SELECT ?paper ?task WHERE "
    "{ ?paper kg:addressesTask ?task } LIMIT 20 OFFSET {offset}",
    "PREFIX skos: <http://www.w3.org/2004/02/skos/core#> SELECT ?e ?label WHERE "
    "{ ?e skos:prefLabel ?label } ORDER BY ?label LIMIT 10 OFFSET {offset}",
    "SELECT (COUNT(*) AS ?n) WHERE { GRAPH <https://w3id.org/mlkg/graph/ontology> { ?s ?p ?o } }",
]
REST = [
    "/papers?limit=5&offset={offset}",
    "/papers?task=unlearning",
    "/tasks?limit=10",
    "/methods?limit=10&offset={offset}",
    "/search?q=learning",
    "/stats",
    "/claims?limit=5&offset={offset}",
    "/papers/{paper}",
]
# Documented 503s: admission control refusing or stopping a query.
NICE = 10  # how far the server and the clients run below the probe
EXPECTED_503 = {"overloaded", "query-timeout", "update-timeout"}


def _triple(i: int) -> str:
    return f"GRAPH <{SOAK_GRAPH}> {{ <urn:soak:s{i}> <urn:soak:p> {i} }}"


class Stats:
    """Latencies and outcomes per endpoint label."""

    def __init__(self, honour_retry_after: bool = True) -> None:
        self.honour_retry_after = honour_retry_after
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.status: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.errors: list[str] = []

    def note(
        self, label: str, started: float, response: httpx.Response | None, why: str = ""
    ) -> None:
        ms = (time.perf_counter() - started) * 1000
        self.latency[label].append(ms)
        if response is None:
            self.status[label]["transport-error"] += 1
            self.errors.append(f"{label}: {why}")
            return
        code = response.status_code
        key = str(code)
        if code == 503:
            kind = response.json().get("type", "").rsplit("/", 1)[-1]
            key = f"503 {kind}"
            if kind not in EXPECTED_503:
                self.errors.append(f"{label}: 503 {kind}")
        elif code >= 500:
            self.errors.append(f"{label}: {code} {response.text[:200]}")
        self.status[label][key] += 1

    def summary(self) -> dict:
        out = {}
        for label, values in sorted(self.latency.items()):
            ordered = sorted(values)
            out[label] = {
                "requests": len(values),
                "p50_ms": round(statistics.median(ordered), 1),
                "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 1),
                "statuses": dict(self.status[label]),
            }
        return out


async def _call(
    http: httpx.AsyncClient, stats: Stats, label: str, method: str, url: str, **kw: object
) -> httpx.Response | None:
    started = time.perf_counter()
    try:
        response = await http.request(method, url, **kw)  # type: ignore[arg-type]
    except httpx.HTTPError as exc:
        stats.note(label, started, None, f"{type(exc).__name__}: {exc}")
        return None
    stats.note(label, started, response)
    if response.status_code == 503 and stats.honour_retry_after:
        # A well-behaved client backs off as told (RFC 9110 §10.2.3); without
        # it a closed-loop client turns admission control's refusals into a spin.
        await asyncio.sleep(_retry_after(response))
    return response


async def _answered(http: httpx.AsyncClient, path: str, params: dict[str, str]) -> httpx.Response:
    """A GET answered 200, waiting as a 503's Retry-After asks (the integrity
    check must not be lost to admission control while the server settles)."""
    for _ in range(60):
        response = await http.get(path, params=params)
        if response.status_code != 503:
            response.raise_for_status()
            return response
        await asyncio.sleep(_retry_after(response))
    raise RuntimeError(f"{path} still refused after a minute")


def _retry_after(response: httpx.Response) -> float:
    """The delay a 503 asks for, in seconds (1 when it names none)."""
    try:
        return max(0.0, float(response.headers.get("retry-after", "1")))
    except ValueError:
        return 1.0


async def soak(
    base: str, duration: float, concurrency: int, server_pid: int, honour_retry_after: bool = True
) -> dict:
    """Drive the server for ``duration`` seconds; the report (without integrity)."""
    stats = Stats(honour_retry_after)
    stop = time.monotonic() + duration
    rng = random.Random(13)
    written: set[int] = set()  # soak triples acknowledged as present
    counter = iter(range(10**9))
    rss: list[tuple[float, float, int | None]] = []  # (s, MB, live query workers)
    # Idle connections are dropped before uvicorn's 5 s keep-alive ends, so a
    # request never races the server closing its connection.
    limits = httpx.Limits(
        max_connections=concurrency + 4,
        max_keepalive_connections=concurrency + 4,
        keepalive_expiry=3.0,
    )
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:
        papers = (await http.get("/papers?limit=100")).json()["items"]
        ids = [p["id"] for p in papers]

        def fill(template: str) -> str:
            return template.replace("{offset}", str(rng.randrange(0, 50))).replace(
                "{paper}", rng.choice(ids)
            )

        async def slow_client(n: int) -> None:
            while time.monotonic() < stop:
                query = f"{SLOW[n % len(SLOW)]} # {next(counter)}"
                await _call(http, stats, "sparql slow", "GET", "/sparql", params={"query": query})

        async def fast_client() -> None:
            while time.monotonic() < stop:
                query = fill(rng.choice(FAST))
                await _call(http, stats, "sparql fast", "GET", "/sparql", params={"query": query})

        async def rest_client() -> None:
            while time.monotonic() < stop:
                path = fill(rng.choice(REST))
                label = "rest " + path.split("?")[0].split("/")[1]
                await _call(http, stats, label, "GET", path)

        async def update_client(n: int) -> None:
            headers = {**AUTH, "Content-Type": "application/sparql-update"}
            while time.monotonic() < stop:
                if n == 2:
                    # An update with WHERE (trial first): touches no soak triple.
                    text = "DELETE { <urn:soak:none> ?p ?o } WHERE { <urn:soak:none> ?p ?o }"
                    await _call(
                        http,
                        stats,
                        "update where",
                        "POST",
                        "/sparql/update",
                        content=text,
                        headers=headers,
                    )
                    continue
                if written and rng.random() < 0.4:
                    i = rng.choice(sorted(written))
                    text = f"DELETE DATA {{ {_triple(i)} }}"
                    response = await _call(
                        http,
                        stats,
                        "update data",
                        "POST",
                        "/sparql/update",
                        content=text,
                        headers=headers,
                    )
                    if response is not None and response.status_code == 204:
                        written.discard(i)
                else:
                    i = next(counter)
                    text = f"INSERT DATA {{ {_triple(i)} }}"
                    response = await _call(
                        http,
                        stats,
                        "update data",
                        "POST",
                        "/sparql/update",
                        content=text,
                        headers=headers,
                    )
                    if response is not None and response.status_code == 204:
                        written.add(i)

        async def health() -> None:
            while time.monotonic() < stop:
                await _call(http, stats, "health", "GET", "/health")
                await asyncio.sleep(1)

        async def memory() -> None:
            started = time.monotonic()
            while time.monotonic() < stop:
                ready = await http.get("/ready")
                workers = ready.json().get("query_workers") if ready.status_code == 200 else None
                rss.append(
                    (round(time.monotonic() - started), round(tree_rss_mb(server_pid), 1), workers)
                )
                await asyncio.sleep(max(1.0, duration / 40))

        tasks = [slow_client(n) for n in range(2)]
        tasks += [update_client(n) for n in range(3)]
        tasks += [fast_client() for _ in range(12)]
        tasks += [rest_client() for _ in range(concurrency - len(tasks))]
        await asyncio.gather(*tasks, health(), memory())

        # Integrity: exactly the acknowledged soak triples are there.
        query = f"SELECT ?o WHERE {{ GRAPH <{SOAK_GRAPH}> {{ ?s <urn:soak:p> ?o }} }}"
        found = await _answered(http, "/sparql", {"query": query})
        present = {int(b["o"]["value"]) for b in found.json()["results"]["bindings"]}
        paper_count = (await _answered(http, "/papers", {"limit": "1"})).json()["total"]
    # Drift: the median of the last quarter against the median of the second
    # quarter (after warm-up); medians, because a sample taken while a killed
    # worker is being replaced dips by one process.
    quarter = max(1, len(rss) // 4)
    early = statistics.median(m for _, m, _ in rss[quarter : 2 * quarter] or rss)
    late = statistics.median(m for _, m, _ in rss[-quarter:])
    return {
        "duration_s": duration,
        "concurrency": concurrency,
        "requests": sum(len(v) for v in stats.latency.values()),
        "errors": len(stats.errors),
        "error_samples": stats.errors[:10],
        "endpoints": stats.summary(),
        "rss_mb": rss,
        "rss_drift": round(late / early - 1, 3),
        "integrity": {
            "acknowledged_triples": len(written),
            "present_triples": len(present),
            "match": present == written,
            "papers_before": len(ids) if len(ids) < 100 else None,
            "papers_after": paper_count,
        },
    }


def _probe(base: str, duration: float, out: Connection) -> None:
    """Time ``GET /health`` and a fast query, alternately every 0.25 s, for
    ``duration`` seconds (in a process of its own); sends the latencies and the
    count of answers other than 200 per label, and every probe in order (wall
    clock, label, ms, answered 200) for ``--timeline``."""
    latencies: dict[str, list[float]] = {"health probe": [], "sparql fast probe": []}
    failures = dict.fromkeys(latencies, 0)
    timeline: list[tuple[float, str, float, bool]] = []  # (wall clock, label, ms, ok)
    stop = time.monotonic() + duration
    with httpx.Client(base_url=base, timeout=60) as http:
        for n in itertools.count():
            if time.monotonic() >= stop:
                break
            label = "health probe" if n % 2 == 0 else "sparql fast probe"
            params = {} if n % 2 == 0 else {"query": f"ASK {{ ?s ?p ?o }} # probe {n}"}
            started = time.perf_counter()
            try:
                ok = http.get("/health" if n % 2 == 0 else "/sparql", params=params).is_success
            except httpx.HTTPError:
                ok = False
            ms = (time.perf_counter() - started) * 1000
            latencies[label].append(ms)
            failures[label] += not ok
            timeline.append((time.time(), label, round(ms, 1), ok))
            time.sleep(0.25)
    out.send((latencies, failures, timeline))


def _summary(values: list[float]) -> dict:
    ordered = sorted(values) or [0.0]
    return {
        "requests": len(values),
        "p50_ms": round(statistics.median(ordered), 1),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 1),
        "max_ms": round(ordered[-1], 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--store", help="Store directory to copy (default: ingest the sample)")
    ap.add_argument("--duration", type=float, default=600.0, help="Seconds (default 600)")
    ap.add_argument("-c", "--concurrency", type=int, default=32)
    ap.add_argument(
        "--ignore-retry-after",
        action="store_true",
        help="Clients send their next request at once after a 503 (default: they wait as told)",
    )
    ap.add_argument(
        "--timeline",
        type=Path,
        help="Also write every probe (wall clock, label, ms) and the server's warnings "
        "(JSON lines, e.g. query workers killed) here, to place a latency tail in time",
    )
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kg-soak-"))
    store = work / "store"
    try:
        prepare_store(store, args.store)
        env = {"KG_UPDATE_TOKEN": TOKEN, "KG_LOG_LEVEL": "warning"}
        with running_server(store, env=env) as base:
            pid = _server_pid(base)
            # The server and the 32 clients run 10 nice levels below the probe:
            # the probe stands for a user on another machine, whose own process
            # does not wait for a CPU behind the load generator; its requests
            # still queue in the server like any other.
            for server_process in tree_pids(pid):
                with contextlib.suppress(OSError):
                    os.setpriority(os.PRIO_PROCESS, server_process, os.nice(0) + NICE)
            context = multiprocessing.get_context("spawn")
            receive, send = context.Pipe(duplex=False)
            probe = context.Process(target=_probe, args=(base, args.duration, send))
            probe.start()
            os.nice(NICE)
            report = asyncio.run(
                soak(base, args.duration, args.concurrency, pid, not args.ignore_retry_after)
            )
            latencies, failures, timeline = receive.recv()
            probe.join()
            if args.timeline:
                _write_timeline(args.timeline, timeline, pid)
            for label, values in latencies.items():
                report["endpoints"][label] = {**_summary(values), "failures": failures[label]}
        check = subprocess.run(
            [sys.executable, "-m", "kg", "validate", "--store", str(store)],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        report["integrity"]["validate_exit"] = check.returncode
        print(json.dumps(report))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _write_timeline(
    path: Path, probes: list[tuple[float, str, float, bool]], server_pid: int
) -> None:
    """The probes and the server's own log lines (its stdout is the log file), one
    JSON object per line in time order."""
    events: list[dict] = [
        {"ts": round(ts, 3), "probe": label, "ms": ms, "ok": ok} for ts, label, ms, ok in probes
    ]
    with contextlib.suppress(OSError):
        log = Path(os.readlink(f"/proc/{server_pid}/fd/1"))
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if isinstance(entry, dict) and "ts" in entry:
                    events.append({"ts": entry["ts"], "server": entry.get("message", "")})
    events.sort(key=lambda e: e["ts"])
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")


def _server_pid(base: str) -> int:
    """The pid of the process listening on ``base``'s port (the uvicorn server)."""
    port = int(base.rsplit(":", 1)[1])
    target = f":{port:04X}"
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[1].endswith(target) and fields[3] == "0A":  # LISTEN
                inodes.add(fields[9])
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                link = os.readlink(fd)
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    return int(entry.name)
        except OSError:
            continue
    raise RuntimeError(f"no process listens on {base}")


if __name__ == "__main__":
    main()
