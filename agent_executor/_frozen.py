"""The base of the library's frozen pydantic models (messages, tool calls, results)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["FrozenModel"]

_FIELD_SETS: dict[frozenset[str], set[str]] = {}
"""One set per combination of given field names, shared by every instance that gave them."""


class FrozenModel(BaseModel):
    """A frozen pydantic model whose set of given fields is shared with its like.

    pydantic keeps on every instance the set of fields its caller gave (``model_fields_set``):
    216 bytes for up to four names, 728 beyond, on every message, tool call, usage and tool
    record a run holds for as long as it runs; about 2 KiB of sets per open stream. A frozen
    model's set never changes after validation (``model_copy(update=...)`` gives the copy a set
    of its own), so instances that gave the same fields share one. It is not to be changed in
    place.
    """

    model_config = ConfigDict(frozen=True)

    def model_post_init(self, context: Any, /) -> None:
        given = self.__pydantic_fields_set__
        shared = _FIELD_SETS.setdefault(frozenset(given), given)
        if shared is not given:
            object.__setattr__(self, "__pydantic_fields_set__", shared)
