"""Toolkits: related tools in one class, sharing its state (a client, a connection).

A :class:`Toolkit` subclass holds its tools as ``@tool`` methods; an instance is given to an
agent whole (``tools=[Weather(api_key=...)]``): each method becomes a tool bound to that
instance (``self`` is never in a schema), and the agent closes the toolkit with itself
(:meth:`Toolkit.aclose`). ``name`` and ``description`` say what the toolkit is for (the
service's agents file enables toolkits by name).
"""

from __future__ import annotations

from typing import ClassVar

from .base import Tool

__all__ = ["Toolkit"]


class Toolkit:
    """Tools as the ``@tool`` methods of a class (see the module docstring)."""

    name: ClassVar[str] = ""
    """The toolkit's name (default: the class name)."""
    description: ClassVar[str] = ""

    @property
    def toolkit_name(self) -> str:
        return self.name or type(self).__name__

    def tools(self) -> list[Tool]:
        """This instance's tools: each ``@tool`` method bound to it, in definition order."""
        names: dict[str, None] = {}
        for cls in reversed(type(self).__mro__):  # a subclass's method replaces its base's
            names.update((attribute, None) for attribute in vars(cls))
        kind = type(self)
        return [
            getattr(self, attribute)
            for attribute in names
            if isinstance(getattr(kind, attribute, None), Tool)
        ]

    async def aclose(self) -> None:
        """Release what the toolkit holds; override it to close a client or connection."""
