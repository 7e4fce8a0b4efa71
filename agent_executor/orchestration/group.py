"""Agent groups: agents that take turns on one task, round by round, in one streamed run.

An :class:`AgentGroup` runs like an agent (``execute``, ``execute_stream``, served by name).
Each round its strategy plans who speaks next and with what query:

- :class:`DirectTurns`: the agents in their order, each given the answer of the one before
  (the first is given the user's message); after the last, the group ends (or starts again
  from the first, with ``cycle=True``);
- :class:`AutoTurns`: a moderator agent reads the task, the agents and what was said so far
  and answers with a JSON plan (``next_agent_name``, ``next_query``, ``next_action``),
  validated with pydantic; a plan that does not parse or names no agent of the group is sent
  back once with what is wrong, and a second bad plan ends the run with ``invalid_plan``;
- :class:`HybridTurns`: fixed successors where you name them (``next={"writer":
  "reviewer"}``), the moderator everywhere else.

The group ends when the plan says ``TERMINATE``, when an answer contains the termination word
(``"TERMINATE"`` by default), or after ``max_rounds`` (``finish_reason="max_turns"``). Every
round begins with an ``AgentSelectedEvent(selected_by="group")`` naming the agent; its events
follow as the agent's own run yields them, its text set apart from the text before. The
group's answer (kept in its memory for the session) is the last answer given.

An agent of the group that stops to wait for a person (approval, ``ask_user``) pauses the
group: the stream ends ``waiting_for_approval`` with the agent's approval requests, and the
client resumes the group (same session) with the approvals: the agent goes on where it stopped,
then the rounds go on. Each agent keeps its own conversation per session of the group
(``<session>/<group>/<agent>``), so it remembers its earlier rounds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._deprecations import moved_names
from .._engine.orchestrator import member_failed, member_session, run_member
from .._engine.output_format import unfenced
from .._engine.state import RunFailed, RunState
from ..agent import Agent
from ..approvals import Approval, PendingRun
from ..command import AgentCommand
from ..errors import ConfigurationError, ErrorCode, PlanRefused
from ..events import AgentSelectedEvent
from ..executor import AgentExecutor
from ..hooks import Hook
from ..messages import AssistantMessage, Message, UserMessage
from ..models import ChatModel, resolve_model
from ..results import ToolCallRecord
from ..settings import RunLimits, ToolLimits
from ..spend import PriceTable
from ._orchestrated import Orchestrated, agent_runner
from .run_view import RunView

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from ..observability import Metrics

__all__ = [
    "TERMINATE",
    "AgentGroup",
    "AutoTurns",
    "DirectTurns",
    "GroupPlan",
    "GroupView",
    "HybridTurns",
    "Said",
    "TurnStrategy",
]

__getattr__ = moved_names(__name__)

TERMINATE = "TERMINATE"
"""The default termination word, and the ``next_action`` that ends a group."""

_SHOWN_CHARS = 4000


class Said(BaseModel):
    """One round: who was asked what, and what they answered."""

    agent: str
    query: str
    answer: str


class GroupPlan(BaseModel):
    """Who speaks next, with what query; ``next_action`` ``TERMINATE`` makes that agent the
    last one (or, with no agent, ends the group on the last answer). The moderator's JSON may
    use snake_case or camelCase keys (``nextAgentName``), as some models write them."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    planning: str = ""
    next_agent_name: str | None = Field(
        default=None, validation_alias=AliasChoices("next_agent_name", "nextAgentName")
    )
    next_query: str = Field(default="", validation_alias=AliasChoices("next_query", "nextQuery"))
    next_action: Literal["CONTINUE", "TERMINATE"] = Field(
        default="CONTINUE",
        validation_alias=AliasChoices("next_action", "nextAction", "next_step_action"),
    )

    @field_validator("next_action", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("next_agent_name", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value


class GroupView(Protocol):
    """What a strategy reads of the group and the run so far."""

    @property
    def agents(self) -> Mapping[str, Agent]: ...

    @property
    def description(self) -> str: ...


class TurnStrategy(Protocol):
    """Plans each round of a group: who speaks next and with what query.

    ``said`` holds the rounds so far (empty for the first); ``task`` is the user's message.
    Raise :class:`~agent_executor.errors.PlanRefused` to end the group with ``invalid_plan``.
    The run is given (a :class:`~agent_executor.orchestration.RunView`) so that a strategy
    that asks an agent or a model (``run.ask``) counts what it spends.
    """

    async def plan(
        self, group: GroupView, task: str, said: Sequence[Said], run: RunView
    ) -> GroupPlan: ...


class DirectTurns:
    """The agents in their order, each given the previous answer; ``cycle`` starts again from
    the first after the last (until the termination word or ``max_rounds``)."""

    def __init__(self, *, cycle: bool = False) -> None:
        self.cycle = cycle

    async def plan(
        self, group: GroupView, task: str, said: Sequence[Said], run: RunView
    ) -> GroupPlan:
        names = list(group.agents)
        if not said:
            return GroupPlan(next_agent_name=names[0], next_query=task, planning="first agent")
        position = names.index(said[-1].agent) + 1
        if position == len(names) and not self.cycle:
            return GroupPlan(next_action="TERMINATE", planning="every agent has spoken")
        name = names[position % len(names)]
        return GroupPlan(next_agent_name=name, next_query=said[-1].answer, planning="next in order")


_MODERATOR_PROMPT = """You moderate a group of agents working on a user's task. Each round you \
pick the agent that should act next and write its query: everything it needs, since it does not \
see the conversation. When the last answer completes the task, end the group.

Answer with one JSON object and nothing else:
{"planning": "<one sentence: why>", "next_agent_name": "<an agent's name, or empty to end now>", \
"next_query": "<the query for that agent>", "next_action": "CONTINUE" or "TERMINATE"}
"TERMINATE" with an agent makes that agent's answer the last; with no agent it ends the group \
on the last answer."""


_SHORTEN = """Rewrite the text below in at most {chars} characters for the agent that works \
on it next: keep every fact, number, name and instruction it needs; drop repetition. Answer \
with the rewritten text only.

{query}"""


class AutoTurns:
    """A moderator agent plans each round (see the module docstring).

    ``moderator`` is an agent (its system prompt should ask for the JSON plan; the default
    prompt is :data:`AutoTurns.PROMPT`) or a model (a string or :class:`ChatModel`), for
    which a moderator agent with the default prompt is built. That agent's calls are spent
    like any agent's: priced at ``prices``, counted in the ``metrics`` registry, given to
    ``hooks`` (a budget's recording hook); what is not given here, the group gives (its
    ``prices``, ``hooks`` and ``metrics``). Its runs are nested in the group's run: its usage
    counts, its text is not the group's.
    """

    PROMPT = _MODERATOR_PROMPT

    def __init__(
        self,
        moderator: Agent | ChatModel | str,
        *,
        prices: PriceTable | None = None,
        hooks: Sequence[Hook] = (),
        metrics: CollectorRegistry | None = None,
    ) -> None:
        self._own = _ModeratorParts(prices, tuple(hooks), metrics)
        self._model: ChatModel | None = None
        self._built: AgentExecutor | None = None
        if isinstance(moderator, Agent):
            self.moderator: Agent = moderator
        else:
            self._model = resolve_model(moderator)
            self.moderator = self._built = _moderator(self._model, self._own)

    def serve(self, group: Orchestrated) -> None:
        """A moderator built here from a model takes what it was not given from ``group``:
        its prices, its hooks and its metrics registry (called by :class:`AgentGroup`)."""
        if self._model is None or self._built is None:
            return
        own = self._own
        parts = _ModeratorParts(
            group.prices if own.prices is None else own.prices,
            own.hooks or group.own_hooks,
            group.metrics.registry if own.metrics is None else own.metrics,
        )
        lent = parts.prices is not own.prices or parts.hooks != own.hooks
        if lent or parts.metrics is not self._built.metrics.registry:
            self.moderator = self._built = _moderator(self._model, parts)

    async def plan(
        self, group: GroupView, task: str, said: Sequence[Said], run: RunView
    ) -> GroupPlan:
        prompt = _situation(group, task, said)
        answer = await self._ask(run, prompt, None, len(said))
        try:
            return _checked_plan(answer, group, said)
        except ValueError as exc:
            retry = f"That plan cannot be used: {exc}\nReply with only the corrected JSON object."
            history: list[Message] = [
                UserMessage(content=prompt),
                AssistantMessage(content=answer),
            ]
            answer = await self._ask(run, retry, history, len(said))
        try:
            return _checked_plan(answer, group, said)
        except ValueError as exc:
            raise PlanRefused(
                f"the moderator's plan was not usable after one correction: {exc}"
            ) from None

    async def _ask(
        self, run: RunView, prompt: str, history: list[Message] | None, rounds: int
    ) -> str:
        command = AgentCommand(user_prompt=prompt, messages=history, max_tool_calls=0)
        step = f"plan{rounds + 1}{'' if history is None else 'b'}"
        result = await run.ask(self.moderator, command, step=step)
        if result.error is not None:
            raise PlanRefused(f"the moderator failed ({result.error.code}): {result.error.message}")
        return result.content


@dataclass(frozen=True)
class _ModeratorParts:
    """What a moderator built from a model is given: prices, hooks, metrics registry."""

    prices: PriceTable | None
    hooks: tuple[Hook, ...]
    metrics: CollectorRegistry | None


def _moderator(model: ChatModel, parts: _ModeratorParts) -> AgentExecutor:
    """The moderator agent of a model: the default prompt, one tool-less turn."""
    return AgentExecutor(
        model=model,
        name="moderator",
        system_prompt=_MODERATOR_PROMPT,
        model_params={"temperature": 0},
        run_limits=RunLimits(max_turns=1),
        tool_limits=ToolLimits(max_calls=0),
        prices=parts.prices,
        hooks=parts.hooks,
        metrics=parts.metrics,
    )


class HybridTurns:
    """Fixed successors where ``next`` names them (``{"writer": "reviewer"}``: the reviewer is
    given the writer's answer), the moderator everywhere else (and for the first round)."""

    def __init__(
        self,
        moderator: Agent | ChatModel | str,
        *,
        next: Mapping[str, str],
        prices: PriceTable | None = None,
        hooks: Sequence[Hook] = (),
        metrics: CollectorRegistry | None = None,
    ) -> None:
        self.auto = AutoTurns(moderator, prices=prices, hooks=hooks, metrics=metrics)
        self.next = dict(next)

    async def plan(
        self, group: GroupView, task: str, said: Sequence[Said], run: RunView
    ) -> GroupPlan:
        if said and said[-1].agent in self.next:
            name = self.next[said[-1].agent]
            return GroupPlan(
                next_agent_name=name,
                next_query=said[-1].answer,
                planning=f"{said[-1].agent} hands over to {name}",
            )
        return await self.auto.plan(group, task, said, run)


class _Paused(BaseModel):
    """What a paused group keeps: the task, the rounds so far, the agent that paused and the
    query it was given, and the tool calls of the rounds before."""

    task: str
    said: list[Said]
    speaker: str
    query: str
    last: bool
    tool_calls: list[ToolCallRecord]


class AgentGroup(Orchestrated):
    """Agents that take turns on one task (see the module docstring).

    ``agents`` are the group's agents, by their names (which must differ). ``strategy``
    defaults to :class:`DirectTurns`. ``termination`` (``None``: none) ends the group when
    an answer contains it. A round's query longer than ``max_query_tokens`` (about four
    characters a token) is first given to ``shortener``, an agent that rewrites it shorter,
    so that a long query does not overflow the next agent's context. The other options are
    those of every group and flow (see :class:`Orchestrated`).
    """

    def __init__(
        self,
        agents: Sequence[Agent],
        *,
        strategy: TurnStrategy | None = None,
        max_rounds: int = 5,
        termination: str | None = TERMINATE,
        shortener: Agent | None = None,
        max_query_tokens: int = 8000,
        name: str = "group",
        **options: Any,
    ) -> None:
        by_name = {agent.name: agent for agent in agents}
        if not by_name:
            raise ConfigurationError("an AgentGroup needs at least one agent")
        if len(by_name) != len(agents):
            raise ConfigurationError("the agents of a group need different names")
        if max_rounds < 1:
            raise ConfigurationError("max_rounds must be >= 1")
        if isinstance(strategy, HybridTurns):
            unknown = sorted({*strategy.next, *strategy.next.values()} - set(by_name))
            if unknown:
                raise ConfigurationError(f"HybridTurns names agents not in the group: {unknown}")
        self.agents: dict[str, Agent] = by_name
        self.strategy: TurnStrategy = DirectTurns() if strategy is None else strategy
        self.max_rounds = max_rounds
        self.termination = termination
        self.shortener = shortener
        self.max_query_tokens = max_query_tokens
        super().__init__(name=name, **options)
        self.metrics.register_group(name, by_name)
        strategy = self.strategy
        auto = strategy.auto if isinstance(strategy, HybridTurns) else strategy
        if isinstance(auto, AutoTurns):
            auto.serve(self)
        self._conduct(_Rounds(self, self.metrics))


class _Rounds:
    """A group's run, round by round (the group's orchestrator)."""

    __slots__ = ("_group", "_metrics")

    def __init__(self, group: AgentGroup, metrics: Metrics) -> None:
        self._group = group
        self._metrics = metrics

    async def start(self, run: RunState) -> None:
        await self._rounds(run, run.ctx.command.user_prompt, [])

    async def resume(self, run: RunState, paused: PendingRun) -> None:
        state = _Paused.model_validate(paused.orchestration)
        run.records.extend(state.tool_calls)
        approvals = run.ctx.command.approvals
        said = list(state.said)
        self._announce(run, state.speaker, len(said) + 1, "resuming its paused run")
        answer = await self._round(run, state.task, said, state.speaker, state.query, approvals)
        if answer is None or self._ends(run, said, answer, state.last):
            return
        await self._rounds(run, state.task, said)

    async def _rounds(self, run: RunState, task: str, said: list[Said]) -> None:
        group = self._group
        while len(said) < group.max_rounds:
            try:
                plan = await group.strategy.plan(group, task, said, RunView(run))
            except PlanRefused as exc:
                raise RunFailed(ErrorCode.INVALID_PLAN, str(exc)) from None
            if plan.next_agent_name is None:
                self._answer(run, said)
                return
            name, query = plan.next_agent_name, plan.next_query or task
            if name not in group.agents:
                raise RunFailed(
                    ErrorCode.INVALID_PLAN, f"the plan names no agent of the group: {name!r}"
                )
            self._announce(run, name, len(said) + 1, plan.planning)
            query = await self._shortened(run, query, len(said) + 1)
            answer = await self._round(
                run, task, said, name, query, None, plan.next_action == TERMINATE
            )
            if answer is None or self._ends(run, said, answer, plan.next_action == TERMINATE):
                return
        run.finish_reason = "max_turns"
        self._answer(run, said)

    async def _shortened(self, run: RunState, query: str, number: int) -> str:
        """``query``, rewritten by the shortener when it is longer than the group allows
        (the shortener's run is nested: its usage counts, its text is not the group's)."""
        group = self._group
        limit = group.max_query_tokens * 4
        if group.shortener is None or len(query) <= limit:
            return query
        task = _SHORTEN.format(chars=limit, query=query)
        shortener = agent_runner(group.shortener)
        command = AgentCommand(user_prompt=task, max_tool_calls=0)
        result = await run_member(run, shortener, command, step=f"shorten{number}", relay=False)
        if result.error is not None:
            raise member_failed(result, f"the shortener {group.shortener.name}")
        return "".join(result.texts)[:limit]

    def _announce(self, run: RunState, name: str, number: int, why: str) -> None:
        detail = f"round {number} of {self._group.max_rounds}"
        run.emit(
            AgentSelectedEvent(
                agent=name, selected_by="group", detail=f"{detail}: {why}" if why else detail
            )
        )

    async def _round(
        self,
        run: RunState,
        task: str,
        said: list[Said],
        name: str,
        query: str,
        approvals: list[Approval] | None,
        last: bool = False,
    ) -> str | None:
        """One agent's round; its answer, or ``None`` when it paused the group."""
        group = self._group
        self._metrics.group_rounds.labels(group.name, name).inc()
        spent = run.usage  # a resumed agent counts again what it spent before its pause
        member = await run_member(
            run,
            agent_runner(group.agents[name]),
            AgentCommand(
                user_prompt=query,
                session_id=member_session(run, group.name, name),
                approvals=approvals,
            ),
            step=f"round{len(said) + 1}",
        )
        if member.error is not None:
            raise member_failed(member, f"agent {name}")
        if member.finish_reason == "waiting_for_approval":
            run.finish_reason = "waiting_for_approval"
            run.paused = PendingRun(
                messages=list(run.new_messages),
                pending=[],
                usage=spent,
                orchestration=_Paused(
                    task=task,
                    said=said,
                    speaker=name,
                    query=query,
                    last=last,
                    tool_calls=list(run.records),
                ).model_dump(mode="json"),
            )
            return None
        answer = "".join(member.texts)
        said.append(Said(agent=name, query=query, answer=answer))
        return answer

    def _ends(self, run: RunState, said: list[Said], answer: str, last: bool) -> bool:
        word = self._group.termination
        if last or (word is not None and word in answer):
            self._answer(run, said)
            return True
        return False

    def _answer(self, run: RunState, said: list[Said]) -> None:
        """The group's answer, kept in its memory: the last one given (without the word)."""
        if not said:
            raise RunFailed(ErrorCode.INVALID_PLAN, "the group ended before any agent answered")
        answer = said[-1].answer
        word = self._group.termination
        if word is not None:
            answer = answer.replace(word, "").rstrip()
        run.add(AssistantMessage(content=answer))


def _situation(group: GroupView, task: str, said: Sequence[Said]) -> str:
    """What the moderator is told each round."""
    agents = "\n".join(
        f"- {name}: {agent.description}" if agent.description else f"- {name}"
        for name, agent in group.agents.items()
    )
    rounds = "\n\n".join(
        f"Round {i}: {s.agent} was asked:\n{_shown(s.query)}\n"
        f"{s.agent} answered:\n{_shown(s.answer)}"
        for i, s in enumerate(said, 1)
    )
    about = f"The group: {group.description}\n\n" if group.description else ""
    return f"{about}The agents:\n{agents}\n\nThe user's task:\n{task}\n\n" + (
        f"What was said so far:\n\n{rounds}" if rounds else "No agent has spoken yet."
    )


def _shown(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + " [...]"


def _checked_plan(answer: str, group: GroupView, said: Sequence[Said]) -> GroupPlan:
    body = unfenced(answer)
    if not body.startswith("{"):
        start, end = body.find("{"), body.rfind("}")
        if start == -1 or end < start:
            raise ValueError("the answer holds no JSON object")
        body = body[start : end + 1]
    try:
        plan = GroupPlan.model_validate(json.loads(body))
    except (ValueError, ValidationError) as exc:
        raise ValueError(f"it is not a valid plan: {exc}") from None
    name = plan.next_agent_name
    if name is None:
        if plan.next_action != TERMINATE:
            raise ValueError("next_agent_name is empty but next_action is not TERMINATE")
        if not said:
            raise ValueError("no agent has answered yet: name the agent that should")
    elif name not in group.agents:
        raise ValueError(f"{name!r} is not an agent of the group ({', '.join(group.agents)})")
    elif not plan.next_query.strip():
        raise ValueError("next_query is empty")
    return plan
