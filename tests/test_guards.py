"""The built-in guards, through the public API."""

from __future__ import annotations

import pytest

from agent_executor import AgentCommand, InputValidationGuard, UserMessage

from .helpers import make_executor


async def test_crlf_input_passes_input_validation() -> None:
    executor = make_executor(["ok"], guards=[InputValidationGuard()])

    result = await executor.execute(AgentCommand(user_prompt="line one\r\nline two\ttab"))

    assert result.success


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (AgentCommand(user_prompt="   "), "the message is empty"),
        (AgentCommand(user_prompt="bell \x07"), "control characters"),
        (AgentCommand(user_prompt="x" * 101), "too long (limit 100 characters)"),
        (AgentCommand(user_prompt="lone \ud800 surrogate"), "lone surrogates"),
        (
            AgentCommand(user_prompt="hi", messages=[UserMessage(content="a")] * 4),
            "too many messages (limit 3)",
        ),
    ],
)
async def test_input_validation_refuses_bad_input(command: AgentCommand, message: str) -> None:
    executor = make_executor([], guards=[InputValidationGuard(max_chars=100, max_messages=3)])

    result = await executor.execute(command)

    assert result.error is not None
    assert result.error.code == "invalid_input"
    assert message in result.error.message
    assert executor.model.requests == []  # type: ignore[attr-defined]
