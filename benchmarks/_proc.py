"""Process helpers for the benchmarks: process-tree memory sampling (Linux
``/proc``) and the store a server benchmark runs on."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def prepare_store(store: Path, source: str | None) -> None:
    """Make ``store``: a copy of the store directory ``source``, or, without one,
    a fresh ingest of the bundled sample by ``kg ingest``."""
    if source:
        shutil.copytree(source, store)
        return
    subprocess.run(
        [sys.executable, "-m", "kg", "ingest", "--store", str(store), "--progress", "none"],
        cwd=REPO,
        check=True,
        capture_output=True,
    )


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_mb(root: int | None = None) -> float:
    """Resident memory of a process and all its descendants, in MB."""
    return sum(_rss_kb(pid) for pid in tree_pids(root or os.getpid())) / 1024


def tree_pids(root: int) -> list[int]:
    """A process and all its descendants."""
    tree = _children()
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(tree.get(pid, ()))
    return found


class PeakSampler:
    """Samples the process tree's RSS in a thread; ``peak`` is the largest sample."""

    def __init__(self, interval: float = 0.2, root: int | None = None) -> None:
        self.interval = interval
        self.root = root
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss_mb(self.root))
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, tree_rss_mb(self.root))


def wait_quiet(max_wait: float = 5.0, threshold: float = 0.25) -> float:
    """Wait (at most ``max_wait`` s) until the machine's CPU use over 1 s is below
    ``threshold``: the machine is shared, and other people's work skews figures."""
    started = time.perf_counter()
    ncpu = os.cpu_count() or 1
    while True:
        before = _busy()
        time.sleep(1.0)
        share = (_busy() - before) / ncpu
        if share < threshold or time.perf_counter() - started > max_wait:
            return round(time.perf_counter() - started, 1)


def _busy() -> float:
    with open("/proc/stat") as fh:
        v = [int(x) for x in fh.readline().split()[1:9]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def cpu_seconds() -> float:
    """Machine-wide busy CPU seconds so far (to report how busy the machine was)."""
    return _busy()
