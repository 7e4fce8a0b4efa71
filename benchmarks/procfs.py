"""The worker's /proc readers: the service's CPU and memory are read from outside it.

CPU comes from ``/proc/<pid>/task/*/schedstat`` (ns resolution, unlike the 10 ms ticks of
``/stat``); the peak RSS is ``VmHWM``, reset to the current RSS before a burst.
"""

from __future__ import annotations

import os


def _status_kib(pid: int | str, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_kib(pid: int | str = "self") -> int:
    return _status_kib(pid, "VmRSS")


def hwm_kib(pid: int | str = "self") -> int:
    return _status_kib(pid, "VmHWM")


def reset_hwm(pid: int | str = "self") -> bool:
    """Reset the peak RSS to the current RSS (Linux >= 4.0)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def proc_cpu_seconds(pid: int) -> float:
    """CPU time of every thread of ``pid`` (ns resolution, unlike the 10 ms ticks of /stat)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total / 1e9
