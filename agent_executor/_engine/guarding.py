"""The guards' turn, before anything is spent: each judges the run, the first refusal ends it."""

from __future__ import annotations

from collections.abc import Sequence
from time import perf_counter

from ..errors import GuardRejection
from ..guards import Guard, checks_content
from .state import RunFailed, RunState
from .telemetry import RunTelemetry

__all__ = ["check_guards"]


async def check_guards(
    run: RunState, guards: Sequence[Guard], telemetry: RunTelemetry, *, rewritten: bool = False
) -> None:
    """Run the guards in order; the first rejection ends the run with its code.

    A guard whose ``checks_content`` is false (``RateLimitGuard``, which counts requests)
    judges requests, not what they say; it is skipped, and the content guards run again, in
    two cases: a command that a ``before_agent_start`` hook rewrote (``rewritten=True``: its
    ``user_prompt``, ``system_prompt`` or ``messages`` changed, by a returned copy or in
    place; the request was counted already), and a run nested in another (an agent tool's
    call, a group's round, a flow's node: the user's request was counted by the run it is
    nested in). A guard without the attribute is a content guard. The rejection of a
    rewritten command is the same as a direct one.
    """
    skip_counters = rewritten or run.ctx.parent is not None
    for guard in guards:
        if skip_counters and not checks_content(guard):
            continue
        started = perf_counter()
        try:
            await guard.check(run.ctx)
        except GuardRejection as exc:
            telemetry.guard_refused(guard.name, exc.code.value, exc.message, rewritten=rewritten)
            raise RunFailed(exc.code, exc.message, exc.retry_after) from None
        finally:
            telemetry.guard_timed(guard.name, "request", perf_counter() - started)
