"""Slash commands: a message that starts with ``/name`` is answered by code, not by the model.

Every agent, group and flow knows ``/help`` (the commands and what they do) and ``/reset``
(forget this conversation); give your own with ``commands=[SlashCommand("/weather",
"today's forecast", handler)]`` (one of the same name replaces a built-in). A command runs after
the guards and ``before_agent_start`` hooks (a rate limit counts it, a refused user is refused)
and before the permit; it makes no model call, its answer is the run's text (``message``
events, ``AgentResult.content``), and it leaves the conversation as it was: neither the command
nor its answer is kept in memory. Since it is part of the run, every endpoint serves it.
A message that starts with ``/`` but names no command goes to the model as any message.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

from .context import RunContext
from .memory import ConversationStore

__all__ = ["SlashCall", "SlashCommand", "SlashCommands"]


@dataclass(frozen=True, slots=True)
class SlashCall:
    """One command as the user sent it: its ``name`` (``/weather``), the text after it
    (``args``), the run's context, and the agent's conversation store (``/reset`` forgets the
    session in it)."""

    name: str
    args: str
    context: RunContext
    memory: ConversationStore


SlashHandler = Callable[[SlashCall], Awaitable[str]]
"""Answers a command: the text the user is given."""


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """A command: its ``name`` (with the slash), what it does (for ``/help``) and its
    handler."""

    name: str
    description: str
    handler: SlashHandler

    def __post_init__(self) -> None:
        if not self.name.startswith("/") or not self.name[1:].replace("-", "").isalnum():
            raise ValueError(f"a command's name is / and letters or digits, not {self.name!r}")


class SlashCommands:
    """The commands one agent answers: the built-ins, then the agent's own."""

    __slots__ = ("_by_name",)

    def __init__(self, own: Iterable[SlashCommand] = ()) -> None:
        builtin = (
            SlashCommand("/help", "list the commands", self._help),
            SlashCommand("/reset", "forget this conversation", _reset),
        )
        self._by_name: Mapping[str, SlashCommand] = {c.name: c for c in (*builtin, *own)}

    def match(self, text: str) -> tuple[SlashCommand, str] | None:
        """The command ``text`` calls and the text after its name, or ``None``."""
        if not text.startswith("/"):
            return None
        name, _, args = text.strip().partition(" ")
        found = self._by_name.get(name.casefold())
        return None if found is None else (found, args.strip())

    async def _help(self, call: SlashCall) -> str:
        lines = [f"{c.name}: {c.description}" for c in self._by_name.values()]
        return "Commands:\n" + "\n".join(lines)


async def _reset(call: SlashCall) -> str:
    ctx = call.context
    if ctx.session_id is None:
        return "There is no conversation to forget: this message has no session."
    await call.memory.delete(ctx.user_id, ctx.session_id)
    return "The conversation is forgotten: the next message starts a new one."
