"""The public surface (see docs/python-api.md): names, ``__all__``, import cost."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import agent_executor

DOCUMENTED_NAMES = {
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
    assert set(names) >= DOCUMENTED_NAMES
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
        "unavailable",
        "invalid_plan",
        "budget_exceeded",
    ]


def test_events_serialise_with_their_type() -> None:
    from agent_executor import ErrorEvent, MessageEvent, event_adapter

    assert event_adapter.dump_python(MessageEvent("hi")) == {"text": "hi", "type": "message"}
    error = event_adapter.validate_json('{"type": "error", "code": "timeout", "message": "m"}')
    assert error == ErrorEvent(code="timeout", message="m")


# The module paths the docs and users name keep working after the restructuring (issue 18):
# some are packages now, some hand on names that moved into a package.
@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("agent_executor.guards.injection", "InjectionGuard"),
        ("agent_executor.guards.ratelimit", "RateLimitGuard"),
        ("agent_executor.guards.output", "OutputGuard"),
        ("agent_executor.tools.rest", "RestTool"),
        ("agent_executor.tools.mcp", "MCPToolset"),
        ("agent_executor.tools.demo", "DEMO_TOOLS"),
        ("agent_executor.observability.metrics", "Metrics"),
        ("agent_executor.memory.compression", "HistoryCompressor"),
        ("agent_executor.tools.ask_user", "ASK_USER"),
        ("agent_executor.redis", "RedisConversationStore"),
        ("agent_executor.guards", "InjectionGuard"),
        ("agent_executor.tools", "ToolResults"),
        ("agent_executor.observability", "JsonLogFormatter"),
        ("agent_executor.integrations.slack", "SlackStreamer"),
        ("server.sse", "frame"),
        ("server.cli", "build_service"),
    ],
)
def test_documented_import_paths_keep_working(module: str, name: str) -> None:
    assert getattr(importlib.import_module(module), name) is not None


def test_the_kept_paths_hand_on_the_same_objects() -> None:
    from agent_executor import ASK_USER, InjectionGuard, OutputGuard
    from agent_executor.guards.injection import InjectionGuard as injection_here
    from agent_executor.guards.output import OutputGuard as output_here
    from agent_executor.tools.ask_user import ASK_USER as ask_user_here

    assert (ask_user_here, injection_here, output_here) == (ASK_USER, InjectionGuard, OutputGuard)


def test_the_orchestration_package_offers_its_modules_names_without_a_lazy_loader() -> None:
    from agent_executor import orchestration
    from agent_executor.orchestration import flow, group

    offered = set(flow.__all__) | set(group.__all__)
    assert offered <= set(orchestration.__all__)
    for name in offered:
        module = flow if name in flow.__all__ else group
        assert vars(orchestration)[name] is getattr(module, name), name


def test_frozen_models_share_their_set_of_given_fields_and_a_copy_keeps_its_own() -> None:
    """Messages and results share one set of given fields per combination (a run holds a
    dozen of them as long as it runs); what each was given, and ``exclude_unset``, stay its
    own, also for a copy with changes."""
    first, second = (agent_executor.UserMessage(content=t) for t in ("a", "b"))
    assert first.model_fields_set is second.model_fields_set
    assert first.model_fields_set == {"content"}
    record = agent_executor.ToolCallRecord(
        call_id="c", tool="t", arguments={}, status="success", duration_ms=1.0, result="ok"
    )
    assert len(record.model_fields_set) == 6

    usage = agent_executor.Usage(input_tokens=3)
    copied = usage.model_copy(update={"output_tokens": 4})
    assert copied.model_fields_set == {"input_tokens", "output_tokens"}
    assert usage.model_fields_set == {"input_tokens"}
    assert agent_executor.Usage(input_tokens=5).model_dump(exclude_unset=True) == {
        "input_tokens": 5
    }
    assert agent_executor.Usage().model_dump(exclude_unset=True) == {}
    restored = agent_executor.AssistantMessage.model_validate_json(
        agent_executor.AssistantMessage(content="hi").model_dump_json(exclude_unset=True)
    )
    assert restored.model_fields_set == {"content"}
