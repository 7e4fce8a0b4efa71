"""What holds resources to release: :class:`Closeable`, and closing several parts at once.

Models, tools, stores, relays and guards may hold HTTP sessions or Redis connections; those
that do have an async ``aclose()``. An agent closes its parts through this protocol rather
than by probing each for the method.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

__all__ = ["Closeable", "aclose_all"]


@runtime_checkable
class Closeable(Protocol):
    """A part that holds something to release; closing it twice does no harm."""

    async def aclose(self) -> None: ...


async def aclose_all(parts: Iterable[object]) -> None:
    """Close each part that is :class:`Closeable`, once each, in order."""
    seen: set[int] = set()
    for part in parts:
        if isinstance(part, Closeable) and id(part) not in seen:
            seen.add(id(part))
            await part.aclose()
