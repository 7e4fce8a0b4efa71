"""Guards: checks that run before anything is spent (before the permit and the model).

A guard is any object with a ``name`` and an async ``check(ctx)`` that raises
:class:`~agent_executor.errors.GuardRejection` to refuse the run. Guards run in order; the first
rejection ends the run with an ``error`` event carrying its code, message and ``retry_after``.

A command a ``before_agent_start`` hook rewrote (its ``user_prompt``, ``system_prompt`` or
``messages`` changed) is checked again before anything is spent, by the guards that judge its
content: every guard except those with a false ``checks_content`` attribute (``RateLimitGuard``,
which counts requests and must not charge one twice). A guard without the attribute is
re-run, so a custom content guard is never bypassed by a hook.

A guard may also screen tool results before they go back to the model (indirect prompt
injection): if it has ``screen_tool_result(tool, text)``, the executor calls it for every
finished call and gives the model the :class:`ScreenVerdict`'s text instead; text that an
``after_tool_call`` hook puts in a result is screened too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar, Protocol, runtime_checkable

from ..command import AgentCommand
from ..context import RunContext
from ..errors import ErrorCode, GuardRejection
from ..screening import ScreenVerdict, ToolResultScreen

__all__ = [
    "Guard",
    "InputValidationGuard",
    "ScreenVerdict",
    "ToolResultScreen",
    "checks_content",
    "error_codes",
    "screens_among",
]


@runtime_checkable
class Guard(Protocol):
    """Refuses a run by raising :class:`GuardRejection` from :meth:`check`.

    ``codes`` lists the error codes the guard may raise, so metrics can start them at 0
    (default: none). ``checks_content`` (default true) says whether the guard judges what the
    command says, and so runs again on a command rewritten by a ``before_agent_start`` hook
    and on runs nested in another (an agent tool's call, a group's round); set it to
    ``False`` for guards that count or charge requests, which judge only the user's request.

    ``checks_content`` is optional: the driver reads it with :func:`checks_content`, which
    gives the default to a guard without it. A guard that is also a
    :class:`ToolResultScreen` screens tool results (:func:`screens_among` picks them out).
    """

    @property
    def name(self) -> str: ...

    @property
    def codes(self) -> tuple[str, ...]: ...

    async def check(self, ctx: RunContext) -> None: ...


CHECKS_CONTENT = True
"""The default of a guard's optional ``checks_content``: it judges what a command says."""


def checks_content(guard: Guard) -> bool:
    """The guard's ``checks_content``, or :data:`CHECKS_CONTENT` for one that has none."""
    return bool(getattr(guard, "checks_content", CHECKS_CONTENT))


def error_codes(guard: Guard) -> tuple[str, ...]:
    """The guard's ``codes``; a guard made before ``codes`` was part of the protocol may
    lack it, and has none to announce."""
    return tuple(getattr(guard, "codes", ()))


def screens_among(guards: Sequence[Guard]) -> tuple[ToolResultScreen, ...]:
    """The guards that also screen tool results, in their order."""
    return tuple(guard for guard in guards if isinstance(guard, ToolResultScreen))


_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class InputValidationGuard:
    """Refuses empty input, oversize input and text no model should receive.

    Checks the prompt and any explicit messages: empty or whitespace-only prompt, more than
    ``max_chars`` characters in all, more than ``max_messages`` messages, control characters
    other than tab, newline and carriage return, and lone UTF-16 surrogates (invalid UTF-8).
    """

    name = "input_validation"
    codes: ClassVar[tuple[str, ...]] = (ErrorCode.INVALID_INPUT.value,)

    def __init__(self, *, max_chars: int = 32_000, max_messages: int = 100) -> None:
        self.max_chars = max_chars
        self.max_messages = max_messages

    async def check(self, ctx: RunContext) -> None:
        """Raise ``invalid_input`` if the command's text is unacceptable."""
        command = ctx.command
        if not command.user_prompt.strip() and not command.resumes:
            raise _invalid("the message is empty")
        texts = [command.user_prompt, command.system_prompt or ""]
        texts += [getattr(m, "content", "") for m in command.messages or ()]
        if len(command.messages or ()) > self.max_messages:
            raise _invalid(f"too many messages (limit {self.max_messages})")
        if sum(len(text) for text in texts) > self.max_chars:
            raise _invalid(f"the input is too long (limit {self.max_chars} characters)")
        for text in texts:
            if _CONTROL_RE.search(text):
                raise _invalid("the input contains control characters")
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise _invalid("the input contains invalid Unicode (lone surrogates)") from None


def user_texts(command: AgentCommand) -> list[str]:
    """What a content guard judges in a command: the prompt, every user message of its
    explicit history and every text value of its template ``variables`` (a client can put an
    attack in any of them; a variable may land in the system prompt)."""
    texts = [command.user_prompt, *(m.content for m in command.messages or () if m.role == "user")]
    return texts + _strings(command.variables or {})


def _strings(value: object) -> list[str]:
    """The text values of a variable's value, nested lists and objects included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list | tuple):
        return [text for item in value for text in _strings(item)]
    return []


def _invalid(message: str) -> GuardRejection:
    return GuardRejection(ErrorCode.INVALID_INPUT, message)
