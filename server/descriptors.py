"""The process's file descriptors as a budget for streams, so that the service refuses a
stream it could not serve (503 ``overloaded``, ``Retry-After``) instead of failing inside it.

Every open stream holds about two descriptors: the client's connection and the model's. The
service raises its soft ``RLIMIT_NOFILE`` to the hard limit at start-up
(:func:`raise_descriptor_limit`), then admits a new stream while the descriptors in use (one
per request in flight, one per run still going, a run that outlived its client included) and
the stream's two leave a reserve for everything else (listening sockets, Redis, logs, files):
a twentieth of the limit, at least 64. docs/operations.md says how to raise the hard limit.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DescriptorBudget",
    "descriptor_limit",
    "quiet_failed_accepts",
    "raise_descriptor_limit",
]

logger = logging.getLogger("server")

PER_STREAM = 2
"""Descriptors one open stream holds: the client's connection and the model's."""


def descriptor_limit() -> int | None:
    """The process's soft limit on open descriptors (``None`` where there is none to read)."""
    try:
        import resource
    except ImportError:  # not on this platform
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def raise_descriptor_limit() -> int | None:
    """Raise the soft limit to the hard one (a process may, without privileges); the limit
    in force after it."""
    try:
        import resource
    except ImportError:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as exc:
            logger.warning("could not raise the open-file limit from %d to %d: %s", soft, hard, exc)
    return descriptor_limit()


@dataclass(frozen=True, slots=True)
class DescriptorBudget:
    """Whether one more stream fits ``limit`` descriptors (``None``: no limit known)."""

    limit: int | None

    @property
    def reserve(self) -> int:
        return 0 if self.limit is None else max(64, self.limit // 20)

    @property
    def max_streams(self) -> int | None:
        """How many streams may be open at once."""
        if self.limit is None:
            return None
        return max(0, (self.limit - self.reserve) // PER_STREAM)

    def admits(self, in_use: int) -> bool:
        """Whether a new stream fits beside ``in_use`` descriptors."""
        return self.limit is None or in_use + PER_STREAM + self.reserve <= self.limit

    @classmethod
    def current(cls) -> DescriptorBudget:
        return cls(descriptor_limit())


_ACCEPT_FAILED = "socket.accept() out of system resource"


def quiet_failed_accepts(loop: asyncio.AbstractEventLoop) -> None:
    """Report a listener out of descriptors as one warning a second, without a traceback.

    When ``accept()`` fails with ``EMFILE`` or ``ENFILE`` asyncio stops accepting for a second
    and tries again (the connections wait in the listen queue), which is right, but it logs an
    error with a traceback for each failed attempt: at 11,000 streams against a limit of
    20,000 descriptors that was 100,000 tracebacks (up to ``backlog`` attempts a wake-up, which
    the service's loop cuts to one, :mod:`server.event_loop`). Other exceptions go to the
    handler that was there before.
    """
    previous = loop.get_exception_handler()
    last = 0.0
    failed = 0

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        nonlocal last, failed
        if context.get("message") != _ACCEPT_FAILED:
            if previous is not None:
                previous(loop, context)
            else:
                loop.default_exception_handler(context)
            return
        failed += 1
        now = time.monotonic()
        if now - last >= 1.0:
            last = now
            logger.warning(
                "out of descriptors: %d connection accepts failed, accepting again in a second "
                "(%s; docs/operations.md says how to raise the open-file limit)",
                failed,
                context.get("exception"),
            )
            failed = 0

    loop.set_exception_handler(handler)
