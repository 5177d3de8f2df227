"""Query benchmark: our ``/sparql`` and REST API next to ``oxigraph serve``, one run.

On a store holding the 4,302 ICLR 2026 papers (built with ``kg ingest`` when
``--store`` does not exist yet):

1. the in-process pyoxigraph figure (query + JSON results serialisation, no
   HTTP) — the ceiling;
2. ``kg serve`` start-up time (process start → ``/health`` answers), median of 3;
3. a real ``kg serve`` subprocess (default settings: result cache on) and one
   with ``KG_QUERY_CACHE=0`` (every request evaluated), and ``oxigraph serve
   --union-default-graph`` on a COPY of the same RocksDB directory (copied while
   no writer has it open), each loaded in turn with the shared load generator
   ``../shared/tools/sparql_load.py`` (Debian ``wrk`` when installed), loopback
   only, bounded in time, at concurrency 1 and 16, for
   (a) a small lookup, (b) papers per task top 20, (c) a 2-hop join
   (``benchmarks/queries/*.rq``), and (d) ``GET /papers?task=…`` on ``kg serve``.

    python benchmarks/query.py --store /tmp/kg-bench/iclr-store --json query.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

SHARED = REPO.parent / "shared"
LOAD = SHARED / "tools" / "sparql_load.py"
ICLR = SHARED / "data" / "iclr2026_abstracts" / "iclr2026_accepted_abstracts.jsonl"
QUERIES = {"a": "a_lookup.rq", "b": "b_aggregate.rq", "c": "c_two_hop.rq"}
REST_TASK = "reinforcement-learning"
TARGETS = {"sparql_ratio_c16": 0.5, "rest_p99_ms_c16": 50.0, "startup_s": 5.0}


def free_port() -> int:
    """A free loopback port."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def oxigraph_binary() -> str:
    """The ``oxigraph`` CLI (PyPI package ``oxigraph``) of this interpreter's environment."""
    found = shutil.which("oxigraph") or str(Path(sys.executable).with_name("oxigraph"))
    if not Path(found).exists():
        raise SystemExit("the oxigraph CLI is missing: pip install 'oxigraph>=0.5.13,<0.6'")
    return found


def build_store(store: Path, processes: int) -> None:
    """Ingest the ICLR 2026 corpus into a new embedded store."""
    if not ICLR.exists():
        raise SystemExit(f"no store at {store} and no corpus at {ICLR} to build it from")
    print(f"building {store} from {ICLR.name} …", file=sys.stderr)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "kg",
            "ingest",
            str(ICLR),
            "--store",
            str(store),
            "-j",
            str(processes),
            "--progress",
            "none",
        ],
        check=True,
        cwd=REPO,
    )


# ------------------------------------------------------------------ in process


def in_process(store: Path, duration: float) -> dict:
    """pyoxigraph in this process: evaluation plus JSON serialisation, no HTTP."""
    from pyoxigraph import QueryResultsFormat, Store

    raw = Store.read_only(str(store))
    out: dict = {}
    for key, name in QUERIES.items():
        sparql = (HERE / "queries" / name).read_text()

        def once(q: str = sparql) -> None:
            raw.query(q, use_default_graph_as_union=True).serialize(format=QueryResultsFormat.JSON)

        once()
        for conc in (1, 16):
            out[f"{key}/c{conc}"] = _closed_loop(once, conc, duration)
    return out


def _closed_loop(work, conc: int, duration: float) -> dict:  # noqa: ANN001
    """``conc`` threads calling ``work`` back to back for ``duration`` seconds."""
    lat: list[float] = []
    lock = threading.Lock()
    stop_at = time.perf_counter() + duration

    def loop() -> None:
        mine = []
        while time.perf_counter() < stop_at:
            t0 = time.perf_counter()
            work()
            mine.append(time.perf_counter() - t0)
        with lock:
            lat.extend(mine)

    started = time.perf_counter()
    with ThreadPoolExecutor(conc) as pool:
        for _ in range(conc):
            pool.submit(loop)
    elapsed = time.perf_counter() - started
    lat.sort()
    return {
        "rps": len(lat) / elapsed,
        "p50_ms": _pct(lat, 50),
        "p99_ms": _pct(lat, 99),
        "requests": len(lat),
    }


def _pct(lat: list[float], p: float) -> float | None:
    if not lat:
        return None
    return lat[min(len(lat) - 1, int(round(p / 100 * (len(lat) - 1))))] * 1e3


# ------------------------------------------------------------------ servers


class Server:
    """A server subprocess on a loopback port, stopped on exit."""

    def __init__(self, args: list[str], ready_url: str, env: dict[str, str] | None = None) -> None:
        self.args, self.ready_url, self.env = args, ready_url, env
        self.proc: subprocess.Popen | None = None
        self.startup_s = 0.0

    def __enter__(self) -> Server:
        # The log goes to a file: an unread pipe would fill up and stall the server.
        self.log = tempfile.NamedTemporaryFile(prefix="kg-bench-server-", suffix=".log")
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            self.args,
            cwd=REPO,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(self.env or {})},
        )
        deadline = started + 120
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"{self.args[:3]} exited: {self.tail()}")
            try:
                if httpx.get(self.ready_url, timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.perf_counter() > deadline:
                raise SystemExit(f"{self.args[:3]} did not start in 120 s")
            time.sleep(0.02)
        self.startup_s = time.perf_counter() - started
        return self

    def tail(self, size: int = 3000) -> str:
        """The end of the server's log."""
        return Path(self.log.name).read_bytes()[-size:].decode(errors="replace")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def kg_serve(store: Path, port: int, env: dict[str, str] | None = None) -> Server:
    """``kg serve`` on the store (read-only: no update token)."""
    args = [
        sys.executable,
        "-m",
        "kg",
        "serve",
        "--store",
        str(store),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-sample",
    ]
    full_env = {"KG_LOG_LEVEL": "warning", **(env or {})}
    return Server(args, f"http://127.0.0.1:{port}/health", full_env)


def oxigraph_serve(location: Path, port: int) -> Server:
    """``oxigraph serve`` with the union default graph, as our store expects."""
    args = [
        oxigraph_binary(),
        "serve",
        "--location",
        str(location),
        "--bind",
        f"127.0.0.1:{port}",
        "--union-default-graph",
    ]
    return Server(args, f"http://127.0.0.1:{port}/query?query=ASK%7B%7D")


def load(
    url: str,
    conc: int,
    duration: float,
    warmup: float,
    pid: int,
    *,
    query_file: Path | None = None,
    accept: str | None = None,
) -> dict:
    """One bounded run of the shared load generator."""
    cmd = [
        sys.executable,
        str(LOAD),
        "--url",
        url,
        "-c",
        str(conc),
        "-d",
        str(duration),
        "--warmup",
        str(warmup),
        "--json",
        "--server-pid",
        str(pid),
        "--timeout",
        "30",
    ]
    cmd += ["--query-file", str(query_file)] if query_file else ["--query", "-"]
    if accept:
        cmd += ["--accept", accept]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + warmup + 120)
    if not done.stdout.strip():
        raise SystemExit(f"load generator failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def check(url: str, query_file: Path) -> int:
    """Rows one request returns (the same on every server, or the comparison is void)."""
    answer = httpx.get(
        url,
        params={"query": query_file.read_text()},
        headers={"Accept": "application/sparql-results+json"},
        timeout=60,
    )
    answer.raise_for_status()
    return len(answer.json()["results"]["bindings"])


def startup_times(store: Path, tries: int = 3) -> list[float]:
    """``kg serve`` start-up on the store: process start → ``/health`` answers."""
    times = []
    for _ in range(tries):
        with kg_serve(store, free_port()) as server:
            times.append(server.startup_s)
    return times


def benchmark(store: Path, duration: float, warmup: float, concurrencies: list[int]) -> dict:
    """Everything, in one run."""
    from benchmarks._proc import wait_quiet

    if not LOAD.exists():
        raise SystemExit(f"the load generator is not at {LOAD} (../shared beside the checkout)")
    results: dict = {
        "duration_s": duration,
        "warmup_s": warmup,
        "cpus": os.cpu_count(),
        "engine": "wrk" if shutil.which("wrk") else "python",
        "runs": {},
    }
    print("in-process ceiling …", file=sys.stderr)
    results["in_process"] = in_process(store, duration)
    print("kg serve start-up …", file=sys.stderr)
    results["startup_s"] = startup_times(store)

    copy = Path(tempfile.mkdtemp(prefix="kg-bench-oxigraph-")) / "store"
    shutil.copytree(store, copy)  # no writer has the store open: a consistent copy
    targets = {
        "kg": lambda: kg_serve(store, free_port()),
        "kg-nocache": lambda: kg_serve(store, free_port(), {"KG_QUERY_CACHE": "0"}),
        "oxigraph": lambda: oxigraph_serve(copy, free_port()),
    }
    rows: dict = {}
    try:
        for name, make in targets.items():
            with make() as server:
                base = server.ready_url.split("/", 3)[:3]
                root = "/".join(base)
                endpoint = root + ("/query" if name == "oxigraph" else "/sparql")
                for key, file in QUERIES.items():
                    path = HERE / "queries" / file
                    rows.setdefault(f"rows/{key}", {})[name] = check(endpoint, path)
                    for conc in concurrencies:
                        wait_quiet()
                        print(f"  {name} ({key}) c={conc} …", file=sys.stderr)
                        results["runs"][f"{name}/{key}/c{conc}"] = load(
                            endpoint, conc, duration, warmup, server.pid, query_file=path
                        )
                if name.startswith("kg"):
                    rest = f"{root}/papers?task={REST_TASK}&limit=20"
                    answer = httpx.get(rest, timeout=60)
                    if answer.status_code != 200:
                        raise SystemExit(
                            f"GET {rest}: {answer.status_code} {answer.text[:500]}\n"
                            f"server log:\n{server.tail()}"
                        )
                    rows.setdefault("rows/d", {})[name] = answer.json().get("total")
                    for conc in concurrencies:
                        wait_quiet()
                        print(f"  {name} (d) c={conc} …", file=sys.stderr)
                        results["runs"][f"{name}/d/c{conc}"] = load(
                            rest, conc, duration, warmup, server.pid, accept="application/json"
                        )
    finally:
        shutil.rmtree(copy.parent, ignore_errors=True)
    results["rows"] = rows
    return results


def print_table(results: dict) -> None:
    """Requests/s and latency per target, query and concurrency, with the ratios."""
    runs = results["runs"]
    print(
        f"query load ({results['engine']}, {results['duration_s']} s per run after "
        f"{results['warmup_s']} s warm-up, {results['cpus']} CPUs)"
    )
    print(
        f"{'query':<6}{'conc':>5}  {'target':<11}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'errors':>7}{'foreign CPU':>12}"
    )
    for key in ("a", "b", "c", "d"):
        for conc in (1, 16):
            for name in ("in-process", "kg", "kg-nocache", "oxigraph"):
                if name == "in-process":
                    r = results["in_process"].get(f"{key}/c{conc}")
                    if r:
                        print(
                            f"{key:<6}{conc:>5}  {name:<11}{r['rps']:>9.0f}{r['p50_ms']:>9.2f}"
                            f"{r['p99_ms']:>9.2f}{'':>7}{'':>12}"
                        )
                    continue
                r = runs.get(f"{name}/{key}/c{conc}")
                if not r:
                    continue
                errors = r["non_2xx"] + r["socket_errors"]
                print(
                    f"{key:<6}{conc:>5}  {name:<11}{r['rps']:>9.0f}{r['p50_ms'] or 0:>9.2f}"
                    f"{r['p99_ms'] or 0:>9.2f}{errors:>7}{r['foreign_cpu_share']:>12.2f}"
                )
    print("ratios (our /sparql ÷ oxigraph serve, req/s):")
    for key in ("a", "b", "c"):
        for conc in (1, 16):
            ox = runs.get(f"oxigraph/{key}/c{conc}", {}).get("rps")
            for name in ("kg", "kg-nocache"):
                ours = runs.get(f"{name}/{key}/c{conc}", {}).get("rps")
                if ox and ours is not None:
                    print(f"  ({key}) c={conc} {name:<11} {ours / ox:.2f}")
    s = results["startup_s"]
    each = ", ".join(f"{x:.2f}" for x in s)
    print(f"kg serve start-up: median {statistics.median(s):.2f} s ({each})")
    print(f"rows per answer: {results['rows']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_store = Path(tempfile.gettempdir()) / "kg-bench" / "iclr-store"
    ap.add_argument(
        "--store",
        type=Path,
        default=default_store,
        help="embedded store with the ICLR corpus (built when missing)",
    )
    ap.add_argument(
        "--processes",
        type=int,
        default=os.cpu_count() or 1,
        help="processes for building the store",
    )
    ap.add_argument("--duration", type=float, default=8.0, help="measured seconds per run")
    ap.add_argument("--warmup", type=float, default=2.0, help="warm-up seconds per run")
    ap.add_argument("--concurrency", default="1,16", help="comma-separated")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    if not (args.store / "CURRENT").exists():
        args.store.parent.mkdir(parents=True, exist_ok=True)
        build_store(args.store, args.processes)
    results = benchmark(
        args.store, args.duration, args.warmup, [int(c) for c in args.concurrency.split(",")]
    )
    print_table(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
