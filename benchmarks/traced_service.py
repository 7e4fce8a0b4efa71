"""The service with ``tracemalloc`` on: a snapshot of what it holds, taken when asked.

    python benchmarks/traced_service.py SNAPSHOT_FILE FRAMES [PYTHON] -m server --port ...

Started by ``benchmarks/streams.py --where``, ``FRAMES`` frames kept per allocation. On
``SIGUSR1`` the service writes a snapshot of its traced allocations to ``SNAPSHOT_FILE`` (and
``SNAPSHOT_FILE.done`` once written). The service itself is unchanged: this wrapper only
starts tracing before it imports anything.
"""

from __future__ import annotations

import gc
import runpy
import signal
import sys
import tracemalloc
from pathlib import Path
from types import FrameType


def main() -> None:
    target = Path(sys.argv[1])
    frames = int(sys.argv[2])
    rest = sys.argv[3:]
    if rest[:1] != ["-m"]:
        rest = rest[1:]  # the interpreter's path, as benchmarks.processes.Service puts it
    if rest[:2] != ["-m", "server"]:
        raise SystemExit("usage: traced_service.py SNAPSHOT_FILE FRAMES [PYTHON] -m server [flags]")
    tracemalloc.start(frames)

    def snapshot(signum: int, frame: FrameType | None) -> None:
        gc.collect()
        tracemalloc.take_snapshot().dump(str(target))
        Path(f"{target}.done").write_text("ok")

    signal.signal(signal.SIGUSR1, snapshot)
    sys.argv = ["server", *rest[2:]]
    runpy.run_module("server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
