"""The service's event loop: asyncio's, with a bound on the ready connections one turn reads.

asyncio reads every ready socket in one turn of its loop and runs the readers in the next.
When the service is behind its model (thousands of streams, each with bytes waiting), that is
one read of model bytes per stream held in the process at once (8 KiB each at 9,000 streams),
waiting for a reader that runs a turn later. Taking at most :data:`EVENTS_PER_TURN` ready
descriptors a turn leaves the rest in the kernel's socket buffers until a later turn (epoll
hands out level-triggered descriptors round-robin, so none waits for long), and each read is
processed soon after it is made. A service that keeps up sees fewer ready descriptors than
that in a turn and is not affected.

The loop also stops a turn's accepts at the first that fails for want of descriptors or memory.
asyncio then stops reading the listener and tries again a second later, but the loop of
Python 3.11 (and of later versions before python/cpython#151615) goes on calling ``accept()``
for the rest of the turn's ``backlog`` (4,096 here) and schedules a retry for each failure:
each retry wakes another such turn, and 1,000 clients against a 200-descriptor service made
over 400,000 failed calls, up to 86,000 a second (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import errno
import select
import selectors
import socket
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["EVENTS_PER_TURN", "BoundedEpollSelector", "ServiceLoop", "loop_factory"]

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


_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
"""The ``accept()`` failures after which asyncio stops reading a listener for a second."""


class _TurnOfAccepts:
    """A listening socket for one turn of accepts, read as drained (``BlockingIOError``, which
    ends the turn) once an ``accept()`` has failed for want of descriptors or memory."""

    __slots__ = ("failed", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.failed = False

    def accept(self) -> tuple[socket.socket, Any]:
        if self.failed:
            raise BlockingIOError
        try:
            return self.sock.accept()
        except OSError as exc:
            self.failed = exc.errno in _OUT_OF_RESOURCES
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


class ServiceLoop(asyncio.SelectorEventLoop):
    """asyncio's selector loop whose turn of accepts ends at the first that fails for want of
    descriptors (see the module's docstring)."""

    def _accept_connection(
        self, protocol_factory: Any, sock: Any, *args: Any, **kwargs: Any
    ) -> None:
        listener = sock.sock if isinstance(sock, _TurnOfAccepts) else sock
        accept = super()._accept_connection  # type: ignore[misc]  # private, not in the stubs
        accept(protocol_factory, _TurnOfAccepts(listener), *args, **kwargs)


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """How the service makes its loop: a :class:`ServiceLoop` on :class:`BoundedEpollSelector`
    where epoll exists (Linux), else ``None`` (asyncio's default)."""
    if sys.platform != "linux":
        return None
    return lambda: ServiceLoop(BoundedEpollSelector())
