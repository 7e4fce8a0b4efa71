"""A run's spending limits are part of :class:`~agent_executor.settings.RunLimits`, which the
executor enforces (docs/spend.md); ``agent_executor.spend`` offers it beside the prices."""

from ..settings import RunLimits

__all__ = ["RunLimits"]
