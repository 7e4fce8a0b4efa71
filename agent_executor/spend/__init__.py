"""Spend: what model calls cost (:class:`PriceTable`) and the limits that stop runaway
spending. See docs/spend.md."""

from .limits import RunLimits
from .prices import Price, PriceTable, default_prices

__all__ = ["Price", "PriceTable", "RunLimits", "default_prices"]
