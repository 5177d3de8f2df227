"""Helpers for tests that use the real server and the real store."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from service.messages import QueryRequest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
ICLR_DEV = SHARED / "gold" / "iclr-dev.jsonl"
ICLR = SHARED / "data" / "iclr2026_abstracts" / "iclr2026_accepted_abstracts.jsonl"


def iclr_dev_predictions(extractor, tmp: Path) -> Path:  # noqa: ANN001
    """The extractor's JSON output, one paper a line, for the 40 iclr-dev abstracts
    (taken from the ICLR file by ``forum_id``): what ``../shared/tools`` scorers read."""
    from kg.reading.readers import read_paths

    wanted = {json.loads(line)["id"] for line in ICLR_DEV.open()}
    source = tmp / "iclr-dev.abstracts.jsonl"
    source.write_text("".join(x for x in ICLR.open() if json.loads(x)["forum_id"] in wanted))
    return write_predictions(extractor, list(read_paths([source])), tmp / "iclr-dev.pred.jsonl")


def write_predictions(extractor, items: list, out: Path) -> Path:  # noqa: ANN001
    """Extract the records among ``items`` (rejections skipped) and write each
    paper's JSON to ``out``, one a line."""
    records = [r for r in items if not hasattr(r, "reason")]
    with out.open("w") as f:
        for paper in extractor.extract(records):
            f.write(json.dumps(paper.to_json()) + "\n")
    return out


def query_request(query: str) -> QueryRequest:
    """A query for a worker pool, its results as SPARQL JSON."""
    return QueryRequest(
        query=query,
        base_iri=None,
        default_graph=None,
        named_graphs=None,
        limit=1000,
        select_format="application/sparql-results+json",
        ask_format="application/sparql-results+json",
        graph_format=None,
    )


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_server(
    store: str | Path,
    *extra_args: str,
    env: dict[str, str] | None = None,
    startup_timeout: float = 60.0,
) -> Iterator[str]:
    """Start ``python -m kg serve`` on a free loopback port; yield its base URL.

    The server is a real uvicorn process; it is stopped when the block ends.
    Its log goes to a file whose tail is shown if it fails to start.
    """
    port = free_port()
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
        *extra_args,
    ]
    full_env = {**os.environ, **(env or {})}
    if env is None or "KG_UPDATE_TOKEN" not in env:
        # The caller's shell must not turn writes on behind a test's back.
        full_env.pop("KG_UPDATE_TOKEN", None)
    log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed in the finally below
        prefix="kg-serve-", suffix=".log", delete=False
    )
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=full_env, cwd=REPO)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}:\n{_tail(log.name)}")
            try:
                if httpx.get(base + "/health", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"server did not start in {startup_timeout} s:\n{_tail(log.name)}"
                )
            time.sleep(0.1)
        yield base
    finally:
        stop_process(proc)
        log.close()
        os.unlink(log.name)


def stop_process(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Stop a server subprocess: SIGTERM, then SIGKILL if it has not exited in time."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _tail(path: str, lines: int = 40) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        return "".join(fh.readlines()[-lines:])


def assert_same_model(trained: Path, shipped: Path) -> None:
    """A model ``kg train`` wrote is the shipped one: the same feature list, and
    weights equal up to another CPU's floating point (a stale model differs by far more)."""
    import numpy as np

    assert (trained / "features.json").read_text("utf-8") == (shipped / "features.json").read_text(
        "utf-8"
    )
    with np.load(trained / "weights.npz") as new, np.load(shipped / "weights.npz") as old:
        assert np.abs(new["sparse"].astype(np.float32) - old["sparse"]).max() <= 0.01
