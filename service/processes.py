"""Operating-system facts about the query worker processes: their CPU time (for
admission control's budget) and their scheduling priority (for the slow lane)."""

from __future__ import annotations

import os


def cpu_seconds(pid: int) -> float | None:
    """CPU time a process has used (user + system), or None where ``/proc`` is missing."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def set_nice(pid: int, nice: int) -> bool:
    """Set a process's nice value; False when not allowed (raising a priority needs privileges)."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, nice)
    except OSError:
        return False
    return True
