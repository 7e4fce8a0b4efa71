"""Spend: what model calls cost (:class:`PriceTable`) and the limits that stop runaway
spending (:class:`UserBudget` per user and period). See docs/spend.md."""

from .budget import (
    BudgetLimit,
    BudgetStore,
    BudgetUsage,
    InMemoryBudgetStore,
    UserBudget,
    parse_budget,
)
from .limits import RunLimits
from .prices import Price, PriceTable, default_prices, load_cost_map

__all__ = [
    "BudgetLimit",
    "BudgetStore",
    "BudgetUsage",
    "InMemoryBudgetStore",
    "Price",
    "PriceTable",
    "RunLimits",
    "UserBudget",
    "default_prices",
    "load_cost_map",
    "parse_budget",
]
