"""What a model call costs: :class:`Price` per million tokens and the :class:`PriceTable`.

Default prices come from the model cost map litellm ships with (the file
``model_prices_and_context_window_backup.json`` in its package, which is what
``LITELLM_LOCAL_MODEL_COST_MAP=True`` makes litellm itself read). The file is read, never
imported through litellm: ``importlib.util.find_spec`` finds the package's folder without
running it, and the 4,000-entry file (about 20 ms to parse) is read once, when the first
executor that prices with it is built (:func:`load_cost_map`): never by a run, so a run never
touches the disk for a price (at ten thousand open streams a file could not even be opened).
A map that cannot be read is a warning at that moment, and its prices are unknown. A table of
your own (``PriceTable.from_file``, ``--prices PRICES.json``) comes first, for self-hosted and
fine-tuned models and negotiated prices.

A model with no price has an unknown cost (``None``), never a guess; that is logged once per
model name.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ConfigurationError
from ..messages import Usage

__all__ = ["Price", "PriceTable", "default_prices", "load_cost_map"]

logger = logging.getLogger("agent_executor.spend")

_COST_MAP = "model_prices_and_context_window_backup.json"
_MILLION = 1_000_000


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens: ``input``, ``output``, and ``cached_input`` for input
    tokens the provider read from its prompt cache (``None``: charged as ``input``)."""

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, usage: Usage) -> float:
        """What ``usage`` costs at this price."""
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        return (
            (usage.input_tokens - cached) * self.input
            + cached * cached_price
            + usage.output_tokens * self.output
        ) / _MILLION


class _PriceEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)


class PriceTable:
    """Prices by model name: yours first, then (with ``defaults``) litellm's cost map.

    A name is looked up as given (``openai/gpt-4o-mini``), then without its provider prefix
    when the map's entry is that provider's (``gpt-4o-mini``, ``litellm_provider: openai``).
    """

    def __init__(self, prices: Mapping[str, Price] | None = None, *, defaults: bool = True) -> None:
        self._own = dict(prices or {})
        self._defaults = defaults
        self._unknown: set[str] = set()
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | Path, *, defaults: bool = True) -> PriceTable:
        """A table from a JSON file ``{"model": {"input": 0.15, "output": 0.6,
        "cached_input": 0.075}}`` (dollars per million tokens); :class:`ConfigurationError`
        names what is wrong with it. An empty object (``{}``) is a table without prices of
        your own (with ``defaults``, litellm's still apply)."""
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise ConfigurationError(f"cannot read prices from {path}: {exc}") from None
        return cls.from_json(data, defaults=defaults, source=str(path))

    @classmethod
    def from_json(
        cls, data: str | bytes, *, defaults: bool = True, source: str = "prices"
    ) -> PriceTable:
        """A table from JSON text in the form :meth:`from_file` reads (``--prices '{}'``);
        ``source`` names it in the :class:`ConfigurationError` that says what is wrong."""
        try:
            raw = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ConfigurationError(f"cannot read prices from {source}: {exc}") from None
        if not isinstance(raw, dict):
            raise ConfigurationError(f"{source}: expected an object of model names to prices")
        prices: dict[str, Price] = {}
        for model, entry in raw.items():
            try:
                parsed = _PriceEntry.model_validate(entry)
            except ValidationError as exc:
                problem = exc.errors()[0]
                where = ".".join(str(p) for p in problem["loc"])
                raise ConfigurationError(
                    f"{source}: {model}{'.' + where if where else ''}: {problem['msg']}"
                ) from None
            prices[model] = Price(parsed.input, parsed.output, parsed.cached_input)
        return cls(prices, defaults=defaults)

    def preload(self) -> None:
        """Read litellm's cost map now if this table uses it (an executor's construction
        calls this: no run reads a file for a price)."""
        if self._defaults:
            load_cost_map()

    @property
    def models(self) -> tuple[str, ...]:
        """The models with a price of your own (not litellm's), in the order given."""
        return tuple(self._own)

    def price(self, model: str) -> Price | None:
        """The price of ``model``, or ``None`` if neither table has one."""
        own = self._own.get(model)
        if own is not None or not self._defaults:
            return own
        return _from_cost_map(model)

    def cost(self, model: str, usage: Usage) -> float | None:
        """What ``usage`` of ``model`` costs; ``None`` (logged once per model) if unknown."""
        price = self.price(model)
        if price is None:
            with self._lock:
                first = model not in self._unknown
                self._unknown.add(model)
            if first:
                logger.info(
                    "no price for model %s: its cost is unknown (give it in --prices)", model
                )
            return None
        return price.cost(usage)


_default: PriceTable | None = None


def default_prices() -> PriceTable:
    """The table every executor uses unless given one: litellm's cost map alone."""
    global _default
    if _default is None:
        _default = PriceTable()
    return _default


_Entry = tuple[float, float, float | None, str | None]
"""A cost map entry as kept: input and output cost per million tokens, cached input cost,
provider. Flat tuples of numbers and strings: the garbage collector stops tracking them, so the
map (4,000 models) costs the process's collections nothing."""

_cost_map: dict[str, _Entry] | None = None
_cost_map_lock = threading.Lock()


def _from_cost_map(model: str) -> Price | None:
    entries = _load_cost_map()
    entry = entries.get(model)
    if entry is None and "/" in model:
        provider, rest = model.split("/", 1)
        candidate = entries.get(rest)
        if candidate is not None and candidate[3] == provider:
            entry = candidate
    if entry is None:
        return None
    return Price(entry[0], entry[1], entry[2])


def load_cost_map() -> None:
    """Read litellm's cost map now, if not yet: at start-up, so that no run reads a file."""
    _load_cost_map()


def _load_cost_map() -> dict[str, _Entry]:
    global _cost_map
    if _cost_map is not None:
        return _cost_map
    with _cost_map_lock:
        if _cost_map is None:
            _cost_map = _compact(_read_cost_map())
    return _cost_map


def _compact(raw: dict[str, Any]) -> dict[str, _Entry]:
    """The entries with a price, as :data:`_Entry` tuples (the rest of litellm's data about a
    model is not a price)."""
    entries: dict[str, _Entry] = {}
    for model, entry in raw.items():
        if not isinstance(entry, dict):
            continue
        try:
            input_cost = float(entry["input_cost_per_token"]) * _MILLION
            output_cost = float(entry["output_cost_per_token"]) * _MILLION
        except (KeyError, TypeError, ValueError):
            continue
        cached = entry.get("cache_read_input_token_cost")
        provider = entry.get("litellm_provider")
        entries[model] = (
            input_cost,
            output_cost,
            None if cached is None else float(cached) * _MILLION,
            provider if isinstance(provider, str) else None,
        )
    return entries


def _read_cost_map() -> dict[str, Any]:
    spec = importlib.util.find_spec("litellm")  # finds the folder; runs nothing
    folders = [] if spec is None else list(spec.submodule_search_locations or [])
    for folder in folders:
        path = Path(folder) / _COST_MAP
        if path.is_file():
            try:
                data = orjson.loads(path.read_bytes())
            except (OSError, orjson.JSONDecodeError) as exc:
                logger.warning("litellm's cost map could not be read (%s): costs unknown", exc)
                return {}
            return data if isinstance(data, dict) else {}
    logger.warning("litellm's model cost map was not found: only --prices gives costs")
    return {}
