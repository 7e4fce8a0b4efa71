"""Eager tools start as soon as their arguments are complete, while the model still streams."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    MessageEvent,
    ModelChunk,
    ModelRequest,
    ToolCall,
    ToolCallDelta,
    ToolMessage,
    ToolStartEvent,
    tool,
)
from agent_executor._engine.assembler import ToolCallAssembler
from agent_executor.models.scripted import call, tool_turn

from .helpers import collect, make_executor

lookup_started = anyio.Event()


@tool(eager=True)
async def lookup(key: str) -> str:
    """A read-only lookup: safe to start early."""
    lookup_started.set()
    return f"value of {key}"


@tool
def write(key: str, value: str) -> str:
    """Changes something: waits for the end of the turn."""
    return f"wrote {key}"


class WaitsForTheEagerTool:
    """Streams a complete ``lookup`` call, begins a second call, then waits for ``lookup``."""

    name = "waits"

    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        self.calls += 1
        if self.calls > 1:
            yield ModelChunk(text="done")
            return
        yield ModelChunk(tool_calls=(ToolCallDelta(0, "c1", "lookup", '{"key": "a"}'),))
        yield ModelChunk(tool_calls=(ToolCallDelta(1, "c2", "write", '{"key": "a", '),))
        with anyio.fail_after(2):
            await lookup_started.wait()  # only possible if lookup started mid-stream
        yield ModelChunk(text="(still writing)")
        yield ModelChunk(tool_calls=(ToolCallDelta(1, arguments='"value": "v"}'),))
        yield ModelChunk(finish_reason="tool_calls")


async def test_an_eager_tool_starts_while_the_model_is_still_streaming() -> None:
    global lookup_started
    lookup_started = anyio.Event()
    executor = AgentExecutor(
        model=WaitsForTheEagerTool(), tools=[lookup, write], metrics=CollectorRegistry()
    )

    events = await collect(executor, "go")

    kinds = [(type(e).__name__, getattr(e, "call_id", getattr(e, "text", None))) for e in events]
    assert kinds.index(("ToolStartEvent", "c1")) < kinds.index(("MessageEvent", "(still writing)"))
    assert kinds.index(("ToolStartEvent", "c2")) > kinds.index(("MessageEvent", "(still writing)"))
    done = events[-1]
    assert [(r.call_id, r.status) for r in done.tool_calls] == [  # type: ignore[union-attr]
        ("c1", "success"),
        ("c2", "success"),
    ]


async def test_results_go_back_in_call_order_even_when_the_eager_call_is_second() -> None:
    executor = make_executor(
        [
            tool_turn(
                call("write", {"key": "k", "value": "v"}, id="w"),
                call("lookup", {"key": "k"}, id="l"),
                call("write", {"key": "z", "value": "v"}, id="w2"),
            ),
            "ok",
        ],
        [lookup, write],
    )

    await executor.execute(AgentCommand(user_prompt="go"))

    messages = executor.model.requests[1].messages  # type: ignore[attr-defined]
    assert [m.tool_call_id for m in messages if isinstance(m, ToolMessage)] == ["w", "l", "w2"]


async def test_non_eager_tools_wait_for_the_end_of_the_turn() -> None:
    executor = make_executor(
        [
            [
                *tool_turn(
                    call("write", {"key": "a", "value": "1"}, id="w1"),
                    call("write", {"key": "b", "value": "2"}, id="w2"),
                ),
                ModelChunk(text="trailing text"),
            ],
            "ok",
        ],
        [lookup, write],
    )

    events = await collect(executor, "go")

    first_start = next(i for i, e in enumerate(events) if isinstance(e, ToolStartEvent))
    trailing = events.index(MessageEvent("trailing text"))
    assert trailing < first_start


async def test_an_eager_call_cut_off_by_length_still_ran_but_the_rest_did_not() -> None:
    executor = make_executor(
        [
            tool_turn(
                call("lookup", {"key": "a"}, id="l"),
                call("write", '{"key": "a", "val', id="w"),
                finish_reason="length",
            ),
            "ok",
        ],
        [lookup, write],
    )

    result = await executor.execute(AgentCommand(user_prompt="go"))

    assert [(r.call_id, r.status) for r in result.tool_calls] == [
        ("l", "success"),
        ("w", "invalid_arguments"),
    ]


def test_interleaved_unfinished_calls_are_not_handed_out_early() -> None:
    assembler = ToolCallAssembler()
    handed = [
        assembler.add(ToolCallDelta(0, "a", "lookup", '{"key"')),
        assembler.add(ToolCallDelta(1, "b", "lookup", '{"key"')),
        assembler.add(ToolCallDelta(0, arguments=': "x"}')),
        assembler.add(ToolCallDelta(1, arguments=': "y"}')),
    ]
    assert handed == [None, None, None, ToolCall(id="a", name="lookup", arguments='{"key": "x"}')]
    assert assembler.calls()[0].id == "a"


def test_a_call_handed_out_early_keeps_its_generated_id() -> None:
    assembler = ToolCallAssembler()
    assert assembler.add(ToolCallDelta(0, None, "lookup", '{"key": "x"}')) is None
    early = assembler.add(ToolCallDelta(1, None, "lookup", "{}"))
    again = assembler.add(ToolCallDelta(0, arguments=""))

    assert early is not None and early.id.startswith("call_")
    assert again is not None and again.name == "lookup"  # call 1, now finished
    assert [c.id for c in assembler.calls()] == [early.id, again.id]
