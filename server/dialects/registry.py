"""The dialects a run can be re-encoded in, by name: a client that re-attaches to a run (on
this replica or, through Redis, on another) gets it in the dialect it started in, rebuilt from
the dialect's name and the run's id alone.

A name is a dialect's own (``typed:json``), or a family and the parameters of one stream
(``ui:<base64 JSON>``), which the family's resolver turns back into the stream's encoder.
"""

from __future__ import annotations

from collections.abc import Callable

from .base import Encoder
from .typed import TypedEncoder

__all__ = ["EncoderAt", "encoder_at", "register", "register_family"]

EncoderAt = Callable[[str, int], Encoder]
"""A dialect for the run of an id, from a position on (0: the run's first client)."""

_DIALECTS: dict[str, EncoderAt] = {
    "typed:text": lambda run_id, start: TypedEncoder("text", run_id, start=start),
    "typed:json": lambda run_id, start: TypedEncoder("json", run_id, start=start),
}
_FAMILIES: dict[str, Callable[[str], EncoderAt]] = {}


def register(name: str, factory: EncoderAt) -> None:
    """Make ``name`` a dialect runs can be kept in (a dialect registers itself)."""
    _DIALECTS[name] = factory


def register_family(family: str, resolve: Callable[[str], EncoderAt]) -> None:
    """Make names ``<family>:<parameters>`` dialects: ``resolve(name)`` rebuilds one (a
    dialect module registers its family when it is imported)."""
    _FAMILIES[family] = resolve


def encoder_at(name: str) -> EncoderAt:
    """The dialect called ``name`` (``KeyError`` for an unknown one)."""
    found = _DIALECTS.get(name)
    if found is not None:
        return found
    family = name.partition(":")[0]
    if family not in _FAMILIES:
        raise KeyError(name)
    return _FAMILIES[family](name)
