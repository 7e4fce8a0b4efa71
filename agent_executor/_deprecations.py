"""What moved, in one table, and the two helpers that make the old paths warn.

Every old import path the package still answers is a row of :data:`MOVED`; nothing else in the
package knows where things went. A row is ``Moved(old_module, old_name, new_module, new_name)``:

- a whole module that moved: ``old_name`` and ``new_name`` are ``None``, and the old module
  (kept as a file that re-exports the new one) calls ``warn_moved(__name__)`` after its imports:
  ``Moved("agent_executor.injection", None, "agent_executor.guards.injection", None)``;
- one name that moved or was renamed: both names are given, and the old module gets
  ``__getattr__ = moved_names(__name__)`` (the new object is imported only when asked for):
  ``Moved("agent_executor.orchestration", "AutoHandoff", "agent_executor.orchestration",
  "AutoTurns")``.

A fifth field, ``removed_in``, is the release that drops the old path; it defaults to
:data:`REMOVED_IN`, the next minor release, so a row names it only to keep an old path longer.
``tests/test_deprecations.py`` checks each row: the new location exists, the old path hands on
the same objects and warns naming the new path and the release; ``tests/test_layout.py`` checks
that a top-level module doing nothing but re-export calls :func:`warn_moved`.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["MOVED", "REMOVED_IN", "Moved", "moved_names", "warn_moved"]

REMOVED_IN = "0.2.0"
"""The release that drops the old paths: the minor release after ``_version.__version__``."""


@dataclass(frozen=True)
class Moved:
    """One old location and where its code is now (see the module docstring)."""

    old_module: str
    old_name: str | None
    new_module: str
    new_name: str | None
    removed_in: str = REMOVED_IN

    @property
    def old(self) -> str:
        """The old location, dotted: ``agent_executor.approvals.ASK_USER``."""
        return _dotted(self.old_module, self.old_name)

    @property
    def new(self) -> str:
        """The new location, dotted: ``agent_executor.tools.ask_user.ASK_USER``."""
        return _dotted(self.new_module, self.new_name)

    def message(self) -> str:
        """The text of the warning the old path gives."""
        advice = f"import from {self.new}" if self.new_name is None else f"use {self.new}"
        return f"{self.old} is deprecated and will be removed in {self.removed_in}; {advice}"


MOVED: tuple[Moved, ...] = (
    Moved("agent_executor.injection", None, "agent_executor.guards.injection", None),
    Moved("agent_executor.output_guard", None, "agent_executor.guards.output", None),
    Moved("agent_executor.ratelimit", None, "agent_executor.guards.ratelimit", None),
    Moved("agent_executor.demo_tools", None, "agent_executor.tools.demo", None),
    Moved("agent_executor.mcp", None, "agent_executor.tools.mcp", None),
    Moved("agent_executor.rest", None, "agent_executor.tools.rest", None),
    Moved("agent_executor.compression", None, "agent_executor.memory.compression", None),
    Moved("agent_executor.metrics", None, "agent_executor.observability.metrics", None),
    Moved("agent_executor.approvals", "ASK_USER", "agent_executor.tools.ask_user", "ASK_USER"),
    Moved(
        "agent_executor.approvals", "AskUserTool", "agent_executor.tools.ask_user", "AskUserTool"
    ),
    Moved(
        "agent_executor.orchestration.agent_tool",
        None,
        "agent_executor.delegation.agent_tool",
        None,
    ),
    Moved("agent_executor.orchestration.handoff", None, "agent_executor.delegation.handoff", None),
    Moved("agent_executor", "AutoHandoff", "agent_executor.orchestration", "AutoTurns"),
    Moved("agent_executor", "DirectHandoff", "agent_executor.orchestration", "DirectTurns"),
    Moved("agent_executor", "HybridHandoff", "agent_executor.orchestration", "HybridTurns"),
    Moved(
        "agent_executor.orchestration", "AutoHandoff", "agent_executor.orchestration", "AutoTurns"
    ),
    Moved(
        "agent_executor.orchestration",
        "DirectHandoff",
        "agent_executor.orchestration",
        "DirectTurns",
    ),
    Moved(
        "agent_executor.orchestration",
        "HybridHandoff",
        "agent_executor.orchestration",
        "HybridTurns",
    ),
    Moved(
        "agent_executor.orchestration",
        "HandoffStrategy",
        "agent_executor.orchestration",
        "TurnStrategy",
    ),
    Moved(
        "agent_executor.orchestration.group",
        "AutoHandoff",
        "agent_executor.orchestration",
        "AutoTurns",
    ),
    Moved(
        "agent_executor.orchestration.group",
        "DirectHandoff",
        "agent_executor.orchestration",
        "DirectTurns",
    ),
    Moved(
        "agent_executor.orchestration.group",
        "HybridHandoff",
        "agent_executor.orchestration",
        "HybridTurns",
    ),
    Moved(
        "agent_executor.orchestration.group",
        "HandoffStrategy",
        "agent_executor.orchestration",
        "TurnStrategy",
    ),
)
"""Every old path still answered, one row each; add rows here (see the module docstring)."""


def warn_moved(module: str) -> None:
    """Warn that the module being imported, ``module`` (its ``__name__``), moved.

    Called from the old module's body, after its imports: the warning points at the line that
    imported it (Python skips the import machinery's frames), or at ``importlib.import_module``
    when the import was made by name."""
    row = _row(module, None)
    # 1 is this function, 2 the old module's body, 3 the code that imported it
    warnings.warn(row.message(), DeprecationWarning, stacklevel=3)


def moved_names(module: str) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``module`` (its ``__name__``) that answers the names
    the table moved out of it: it warns, then imports and returns the object at its new
    location; any other name is an :class:`AttributeError`, as without it."""
    rows = {row.old_name: row for row in MOVED if row.old_module == module and row.old_name}

    def __getattr__(name: str) -> Any:
        row = rows.get(name)
        if row is None or row.new_name is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        # 1 is this function, 2 the code that asked for the name
        warnings.warn(row.message(), DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(row.new_module), row.new_name)

    return __getattr__


def _row(module: str, name: str | None) -> Moved:
    for row in MOVED:
        if (row.old_module, row.old_name) == (module, name):
            return row
    location = _dotted(module, name)
    raise LookupError(f"{location} is not in agent_executor._deprecations.MOVED")


def _dotted(module: str, name: str | None) -> str:
    return module if name is None else f"{module}.{name}"
