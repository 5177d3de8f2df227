"""What a long stream of checkpoints costs a query worker's open, with and
without reopening the writer's store once its MANIFEST passes the limit.

Two stores side by side in one process, written alike round by round: each
round makes a few writes (inserts and deletes of one triple, as the soak's
update clients do), then a checkpoint as the snapshot publisher takes one
(flush, ``Store.backup``). The second store is reopened whenever its MANIFEST
passes ``KG_MANIFEST_LIMIT``'s default (what ``service.snapshots.Roll`` does
in the server). Every ``--every`` rounds, the newest checkpoint of each is
opened read-only as a query worker opens it (median of 3).

    python benchmarks/manifest.py                    # 1,200 checkpoints (the soak's ten minutes)
    python benchmarks/manifest.py --checkpoints 300 --json manifest.json
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pyoxigraph import Store

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kg.settings import Settings  # noqa: E402
from kg.store.embedded import EmbeddedStore, manifest_bytes  # noqa: E402

MANIFEST_LIMIT = Settings().manifest_limit

GRAPH = "urn:bench:graph"


def _open_ms(path: Path) -> float:
    """Median ms to open a checkpoint read-only and answer one ASK."""
    times = []
    for _ in range(3):
        started = time.perf_counter()
        reader = Store.read_only(str(path))
        bool(reader.query("ASK { ?s ?p ?o }"))
        times.append((time.perf_counter() - started) * 1000)
        del reader
    return statistics.median(times)


class Writer:
    """One store, its newest checkpoint, and whether it rolls its MANIFEST."""

    def __init__(self, root: Path, roll: bool) -> None:
        self.root = root
        self.store = EmbeddedStore(root / "store")
        self.roll = roll
        self.rolls = 0
        self.checkpoint: Path | None = None
        self.checkpoint_ms: list[float] = []

    def write(self, text: str) -> None:
        self.store.update(text)

    def publish(self, n: int) -> None:
        started = time.perf_counter()
        target = self.root / f"c{n}"
        self.store.flush()
        self.store.raw.backup(str(target))
        self.checkpoint_ms.append((time.perf_counter() - started) * 1000)
        if self.checkpoint is not None:
            shutil.rmtree(self.checkpoint)
        self.checkpoint = target
        if self.roll and manifest_bytes(self.store.path) > MANIFEST_LIMIT:
            self.store.reopen()
            self.rolls += 1


def main() -> int:
    """Print one row per sample and a summary; optionally write them as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoints", type=int, default=1200)
    parser.add_argument("--every", type=int, default=100, help="sample every N checkpoints")
    parser.add_argument("--writes", type=int, default=3, help="writes per checkpoint")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kg-manifest-"))
    rows = []
    try:
        plain = Writer(work / "plain", roll=False)
        rolled = Writer(work / "rolled", roll=True)
        rng = random.Random(7)
        live: list[int] = []
        counter = 0
        print("checkpoint  MANIFEST kB (no roll / roll)  open ms (no roll / roll)")
        for n in range(1, args.checkpoints + 1):
            for _ in range(args.writes):
                if live and rng.random() < 0.4:
                    i, verb = live.pop(rng.randrange(len(live))), "DELETE"
                else:
                    counter += 1
                    i, verb = counter, "INSERT"
                    live.append(i)
                text = f"{verb} DATA {{ GRAPH <{GRAPH}> {{ <urn:s{i}> <urn:p> {i} }} }}"
                plain.write(text)
                rolled.write(text)
            plain.publish(n)
            rolled.publish(n)
            if n % args.every == 0 or n == 1:
                assert plain.checkpoint is not None and rolled.checkpoint is not None
                row = {
                    "checkpoints": n,
                    "manifest_kb": [
                        round(manifest_bytes(plain.checkpoint) / 1024, 1),
                        round(manifest_bytes(rolled.checkpoint) / 1024, 1),
                    ],
                    "open_ms": [
                        round(_open_ms(plain.checkpoint), 1),
                        round(_open_ms(rolled.checkpoint), 1),
                    ],
                }
                rows.append(row)
                kb, ms = row["manifest_kb"], row["open_ms"]
                print(f"{n:>10}  {kb[0]:>12} / {kb[1]:<12}  {ms[0]:>8} / {ms[1]}", flush=True)
        summary = {
            "rolls": rolled.rolls,
            "checkpoint_ms_median": [
                round(statistics.median(plain.checkpoint_ms), 1),
                round(statistics.median(rolled.checkpoint_ms), 1),
            ],
            "same_quads": len(plain.store) == len(rolled.store),
        }
        print(json.dumps(summary))
        if args.json:
            args.json.write_text(json.dumps({"rows": rows, **summary}, indent=1), "utf-8")
        plain.store.close()
        rolled.store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
