"""The public surface of SPEC section 2: names, ``__all__``, import cost."""

from __future__ import annotations

import subprocess
import sys

import agent_executor

SPEC_NAMES = {
    "tool",
    "AgentCommand",
    "AgentExecutor",
    "AgentResult",
    "MessageEvent",
    "ToolStartEvent",
    "ToolEndEvent",
    "ErrorEvent",
    "DoneEvent",
    "ChatModel",
    "LiteLLMModel",
    "ScriptedModel",
    "DemoModel",
    "Usage",
    "ToolCallRecord",
    "ErrorInfo",
    "Guard",
    "InputValidationGuard",
    "Hook",
    "HookRejection",
    "GuardRejection",
    "ConversationStore",
    "InMemoryConversationStore",
    "AgentExecutorError",
    "ModelError",
}


def test_all_is_sorted_complete_and_importable() -> None:
    names = agent_executor.__all__
    assert names == sorted(names)
    assert set(names) >= SPEC_NAMES
    for name in names:
        assert getattr(agent_executor, name) is not None


def test_importing_the_library_does_not_import_litellm_or_the_server() -> None:
    code = (
        "import sys, agent_executor; "
        "print(any(m == 'litellm' or m.startswith('litellm.') for m in sys.modules), "
        "'server' in sys.modules, 'aiohttp.web' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False"]


def test_error_codes_match_the_spec() -> None:
    assert [code.value for code in agent_executor.ErrorCode] == [
        "rate_limited",
        "injection_detected",
        "invalid_input",
        "hook_rejected",
        "unsupported_format",
        "timeout",
        "overloaded",
        "llm_error",
        "internal_error",
        "output_blocked",
    ]


def test_events_serialise_with_their_type() -> None:
    from agent_executor import ErrorEvent, MessageEvent, event_adapter

    assert event_adapter.dump_python(MessageEvent("hi")) == {"text": "hi", "type": "message"}
    error = event_adapter.validate_json('{"type": "error", "code": "timeout", "message": "m"}')
    assert error == ErrorEvent(code="timeout", message="m")
