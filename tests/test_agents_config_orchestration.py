"""``--agents AGENTS.json`` declaring handoffs, agents as tools and groups: the file's checks,
what it builds, and a real service streaming a group and handing a conversation over."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_executor import AgentCommand, AgentTool, Handoff
from agent_executor.orchestration import AgentGroup, AutoTurns, DirectTurns, HybridTurns
from server.cli import CliError

from .fakes.openai_server import FakeOpenAIServer, Stream, text_stream, tool_call_stream
from .server_helpers import service_process
from .test_agents_config import build, write
from .test_server_tool_modes import parse


def test_handoffs_and_agent_tools_are_wired_once_every_agent_exists(tmp_path: Path) -> None:
    config = {
        "agents": {
            "triage": {"tools": [], "handoffs": ["billing"], "agent_tools": ["researcher"]},
            "billing": {"tools": [], "handoffs": ["triage"]},  # back to one built before
            "researcher": {"tools": []},
        }
    }

    _, router = build(tmp_path, config)

    triage, billing = router.agents["triage"], router.agents["billing"]
    assert list(triage.tools) == ["transfer_to_billing", "researcher"]
    handover, researcher = triage.tools.values()
    assert isinstance(handover, Handoff) and handover.agent is billing
    assert isinstance(researcher, AgentTool)
    assert isinstance(billing.tools["transfer_to_triage"], Handoff)
    assert list(router.agents["researcher"].tools) == []


def test_groups_are_served_by_name_with_their_strategies(tmp_path: Path) -> None:
    config = {
        "default": "desk",
        "agents": {"writer": {"tools": []}, "reviewer": {"tools": []}, "editor": {}},
        "groups": {
            "desk": {"agents": ["writer", "reviewer"], "cycle": True, "max_rounds": 3},
            "auto": {
                "agents": ["writer", "reviewer", "editor"],
                "strategy": "auto",
                "description": "Writes and reviews.",
                "termination": None,
            },
            "hybrid": {
                "agents": ["writer", "reviewer"],
                "strategy": "hybrid",
                "moderator": {"model": "openai/moderator-mini", "api_base": "http://127.0.0.1:1"},
                "next": {"writer": "reviewer"},
            },
        },
    }

    flags = ("--model", "openai/flags-mini", "--api-base", "http://127.0.0.1:1")
    _, router = build(tmp_path, config, "--rate-limit", "5/minute", *flags)

    assert list(router.agents) == ["writer", "reviewer", "editor", "desk", "auto", "hybrid"]
    assert router.default == "desk"
    desk, auto, hybrid = (router.agents[name] for name in ("desk", "auto", "hybrid"))
    assert isinstance(desk, AgentGroup) and isinstance(desk.strategy, DirectTurns)
    assert desk.strategy.cycle and desk.max_rounds == 3 and desk.termination == "TERMINATE"
    assert desk.agents == {"writer": router.agents["writer"], "reviewer": router.agents["reviewer"]}
    assert isinstance(auto, AgentGroup) and isinstance(auto.strategy, AutoTurns)
    assert auto.strategy.moderator.model.name == "openai/flags-mini"  # the flags' model
    assert auto.termination is None and auto.description == "Writes and reviews."
    assert isinstance(hybrid, AgentGroup) and isinstance(hybrid.strategy, HybridTurns)
    assert hybrid.strategy.next == {"writer": "reviewer"}
    assert hybrid.strategy.auto.moderator.model.name == "openai/moderator-mini"
    # the service's guards (one rate limit across agents and groups) and its own memory
    assert all(a is b for a, b in zip(desk._guards, router.agents["writer"]._guards, strict=True))
    assert desk.memory is not None and desk.memory is not router.agents["writer"].memory


@pytest.mark.parametrize(
    ("group", "flags"),
    [
        ({"strategy": "auto"}, ()),  # the flags' model: the demo model
        ({"strategy": "hybrid", "next": {"a": "b"}}, ()),  # its first round is planned too
        (
            {"strategy": "auto", "moderator": {"model": "demo"}},
            ("--model", "openai/m", "--api-base", "http://127.0.0.1:1"),
        ),
    ],
    ids=["auto", "hybrid", "named"],
)
def test_a_group_moderated_by_the_demo_model_is_refused_at_start_up(
    tmp_path: Path, group: dict[str, Any], flags: tuple[str, ...]
) -> None:
    """The demo model writes prose, never a plan: such a group would start and then answer
    every request 502 invalid_plan."""
    config = {"agents": {"a": {}, "b": {}}, "groups": {"g": {"agents": ["a", "b"], **group}}}

    with pytest.raises(CliError) as caught:
        build(tmp_path, config, *flags)

    assert str(caught.value) == (
        f"--agents {tmp_path / 'agents.json'}: group 'g': the {group['strategy']} strategy's "
        "moderator is the demo model, which cannot write the JSON plans a moderator must "
        "(every request would fail with invalid_plan); give the group "
        '"moderator": {"model": "provider/model"}, serve a real --model, or use '
        '"strategy": "direct"'
    )


async def test_a_group_of_the_file_runs_its_agents_in_turn(tmp_path: Path) -> None:
    config = {
        "agents": {"a": {"tools": []}, "b": {"tools": []}},
        "groups": {"ab": {"agents": ["a", "b"]}},
    }
    _, router = build(tmp_path, config)

    result = await router.execute(AgentCommand(user_prompt="hello"), agent="ab")
    await router.aclose()

    assert result.error is None, result.error
    assert result.content


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"agents": {"a": {"handoffs": ["zed"]}}},
            "agent 'a': handoffs names 'zed', which is not one of the agents: a",
        ),
        ({"agents": {"a": {"agent_tools": ["a"]}}}, "agent 'a' names itself in 'agent_tools'"),
        ({"agents": {"a": {"handoffs": ["a"]}}}, "agent 'a' names itself in 'handoffs'"),
        (
            {"agents": {"a": {}, "b": {"handoffs": ["a", "a"]}}},
            "agent 'b': an agent appears twice in 'handoffs'",
        ),
        ({"agents": {"a": {"handoffs": "b"}}}, "agents.a.handoffs: Input should be a valid list"),
        (
            {"agents": {"a": {}}, "groups": {"a": {"agents": ["a"]}}},
            "group 'a' has the name of an agent",
        ),
        (
            {"agents": {"a": {}}, "groups": {"g": {"agents": ["a", "x"]}}},
            "group 'g' names 'x', which is not one of the agents: a",
        ),
        ({"agents": {"a": {}}, "groups": {"g": {"agents": []}}}, "groups.g.agents: List should"),
        (
            {"agents": {"a": {}}, "groups": {"g": {"agents": ["a"], "strategy": "vote"}}},
            "groups.g.strategy: Input should be 'direct', 'auto' or 'hybrid'",
        ),
        (
            {
                "agents": {"a": {}},
                "groups": {"g": {"agents": ["a"], "strategy": "auto", "cycle": True}},
            },
            "groups.g: 'cycle' is for the direct strategy only",
        ),
        (
            {"agents": {"a": {}}, "groups": {"g": {"agents": ["a"], "moderator": {}}}},
            "groups.g: the direct strategy has no moderator",
        ),
        (
            {"agents": {"a": {}}, "groups": {"g": {"agents": ["a"], "strategy": "hybrid"}}},
            "groups.g: the hybrid strategy needs 'next'",
        ),
        (
            {"agents": {"a": {}}, "groups": {"g": {"agents": ["a"], "next": {"a": "a"}}}},
            "groups.g: 'next' is for the hybrid strategy only",
        ),
        (
            {
                "agents": {"a": {}, "b": {}},
                "groups": {"g": {"agents": ["a"], "strategy": "hybrid", "next": {"a": "b"}}},
            },
            "group 'g': next names 'b', which is not one of its agents: a",
        ),
        (
            {"agents": {"a": {}}, "groups": {"g": {"agents": ["a"], "max_rounds": 0}}},
            "groups.g.max_rounds: Input should be greater than or equal to 1",
        ),
        (
            {"agents": {"a": {}}, "groups": {"my group": {"agents": ["a"]}}},
            "invalid group name 'my group'",
        ),
        (
            {"default": "h", "agents": {"a": {}}, "groups": {"g": {"agents": ["a"]}}},
            "default agent 'h' is not one of the agents: a, g",
        ),
        (
            {
                "agents": {"a": {}},
                "groups": {
                    "g": {"agents": ["a"], "strategy": "auto", "moderator": {"api_key_env": "NOPE"}}
                },
            },
            "group 'g': moderator: api_key_env names NOPE, which is not set",
        ),
        (
            # a tool of the agent's own modules takes the name an agent tool would have
            {"agents": {"get_time": {"tools": []}, "b": {"agent_tools": ["get_time"]}}},
            "agent 'b': tools named ['get_time'] are registered already",
        ),
    ],
)
def test_a_bad_orchestration_entry_is_a_cli_error(
    tmp_path: Path, config: Any, message: str
) -> None:
    with pytest.raises(CliError) as caught:
        build(tmp_path, config)

    assert message in str(caught.value)


async def test_the_service_streams_a_group_and_hands_over_as_its_file_says(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    config = write(
        tmp_path / "agents.json",
        {
            "default": "team",
            "agents": {
                "triage": {
                    "model": "openai/triage-mini",
                    "tools": [],
                    "handoffs": ["billing"],
                    "agent_tools": ["support"],
                },
                "billing": {
                    "model": "openai/billing-mini",
                    "system_prompt": "You handle billing.",
                    "tools": [],
                },
                "support": {"model": "demo", "tools": []},
                "researcher": {"model": "demo", "tools": []},
            },
            "groups": {
                "team": {"agents": ["support", "researcher"], "description": "Two demo agents."}
            },
        },
    )
    server.script(
        Stream(tool_call_stream([("call_1", "transfer_to_billing", {})])),  # triage hands over
        Stream(text_stream(["Invoice 42 ", "was paid."])),  # billing answers
    )
    with service_process("--agents", config, "--api-base", server.base_url) as (process, base):
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            group = await client.post(
                "/api/chat/stream", json={"message": "hello", "events": "json"}
            )
            handed = await client.post(
                "/api/chat/stream",
                json={"message": "Was invoice 42 paid?", "agent": "triage", "events": "json"},
            )
            metrics = (await client.get("/metrics")).text
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 0
        output = process.stdout.read() if process.stdout else ""

    assert group.status_code == 200, group.text
    assert group.headers["X-Agent"] == "team"
    events = [(kind, json.loads(data) if data else None) for kind, data in parse(group.text)]
    selected = [data for kind, data in events if kind == "agent_selected"]
    assert [(s["agent"], s["selected_by"]) for s in selected] == [
        ("support", "group"),
        ("researcher", "group"),
    ]
    assert selected[0]["detail"].startswith("round 1 of 5")
    assert [kind for kind, _ in events][-1] == "done"
    assert events[-1][1]["finish_reason"] == "stop"
    assert any(kind == "message" for kind, _ in events)

    assert handed.status_code == 200, handed.text
    events = [(kind, json.loads(data) if data else None) for kind, data in parse(handed.text)]
    kinds = [kind for kind, _ in events]
    assert kinds[:3] == ["tool_start", "tool_end", "agent_selected"]
    assert events[2][1] == {"agent": "billing", "selected_by": "handoff", "detail": "from triage"}
    answer = "".join(data["text"] for kind, data in events if kind == "message")
    assert answer == "Invoice 42 was paid."
    assert kinds[-1] == "done"

    triage_call, billing_call = server.requests
    assert triage_call["model"] == "triage-mini"
    assert sorted(t["function"]["name"] for t in triage_call["tools"]) == [
        "support",
        "transfer_to_billing",
    ]
    assert billing_call["model"] == "billing-mini"
    assert billing_call["messages"][0] == {"role": "system", "content": "You handle billing."}

    assert 'agent_executor_handoffs_total{agent="billing"} 1.0' in metrics
    for agent in ("support", "researcher"):
        assert f'agent_executor_group_rounds_total{{agent="{agent}",group="team"}} 1.0' in metrics
    assert "group team (strategy: direct; agents: support, researcher; max rounds: 5)" in output
