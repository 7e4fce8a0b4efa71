"""The service's event loop: asyncio's, with a bound on the ready connections one turn reads.

asyncio reads every ready socket in one turn of its loop and runs the readers in the next.
When the service is behind its model (thousands of streams, each with bytes waiting), that is
one read of model bytes per stream held in the process at once (8 KiB each at 9,000 streams),
waiting for a reader that runs a turn later. Taking at most :data:`EVENTS_PER_TURN` ready
descriptors a turn leaves the rest in the kernel's socket buffers until a later turn (epoll
hands out level-triggered descriptors round-robin, so none waits for long), and each read is
processed soon after it is made. A service that keeps up sees fewer ready descriptors than
that in a turn and is not affected.
"""

from __future__ import annotations

import asyncio
import select
import selectors
import sys
from collections.abc import Callable

__all__ = ["EVENTS_PER_TURN", "BoundedEpollSelector", "loop_factory"]

EVENTS_PER_TURN = 512
"""Ready descriptors one turn of the loop takes at most."""


class _Epoll:
    """``select.epoll`` that hands out at most :data:`EVENTS_PER_TURN` ready descriptors per
    ``poll`` (``select.epoll`` cannot be subclassed)."""

    __slots__ = ("_epoll", "close", "fileno", "modify", "register", "unregister")

    def __init__(self) -> None:
        epoll = self._epoll = select.epoll()
        self.register, self.modify, self.unregister = epoll.register, epoll.modify, epoll.unregister
        self.fileno, self.close = epoll.fileno, epoll.close

    def poll(self, timeout: float = -1, maxevents: int = -1) -> list[tuple[int, int]]:
        if maxevents <= 0 or maxevents > EVENTS_PER_TURN:
            maxevents = EVENTS_PER_TURN
        return self._epoll.poll(timeout, maxevents)


if sys.platform == "linux":

    class BoundedEpollSelector(selectors.EpollSelector):
        """An epoll selector whose ``select`` returns at most :data:`EVENTS_PER_TURN` keys."""

        _selector_cls = _Epoll


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """How the service makes its loop: a selector loop on :class:`BoundedEpollSelector` where
    epoll exists (Linux), else ``None`` (asyncio's default)."""
    if sys.platform != "linux":
        return None
    return lambda: asyncio.SelectorEventLoop(BoundedEpollSelector())
