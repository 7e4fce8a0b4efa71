"""Where :mod:`agent_executor.delegation.handoff` used to live (the parts any agent can use moved
below the executor, out of the orchestration package)."""

from .._deprecations import warn_moved
from ..delegation.handoff import *  # noqa: F403
from ..delegation.handoff import __all__ as __all__

warn_moved(__name__)
