"""``--agents`` in YAML as well as JSON, every problem of the file named by the flag, the file
and (where the format gives it) the line, and each agent's ``retrieval`` folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_executor import AgentCommand, AgentExecutor, AgentResult, AgentRouter, DemoModel
from agent_executor.orchestration import AgentGroup, DirectTurns
from server.cli import CliError, ServeConfig, build_parser, build_service

from .test_agents_config import TOOLS, write

AGENTS_YAML = """\
# the agents of the service
default: desk
agents:
  writer:
    description: Writes the article.
    system_prompt: Write the article you are asked for.
    tools: [shout_tools]
  reviewer:
    system_prompt: Review the article; say TERMINATE when it is good.
    tools: []
groups:
  desk:
    agents: [writer, reviewer]
    max_rounds: 4
"""


def build(path: str, *flags: str, env: dict[str, str] | None = None) -> AgentRouter:
    args = build_parser().parse_args(["serve", "--agents", path, *flags])
    service = build_service(ServeConfig.from_args(args, env or {}))
    assert isinstance(service.agents, AgentRouter)
    return service.agents


def refusal(path: str, *flags: str, env: dict[str, str] | None = None) -> str:
    with pytest.raises(CliError) as caught:
        build(path, *flags, env=env)
    return str(caught.value)


def test_a_yaml_agents_file_builds_what_its_json_twin_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "shout_tools.py", TOOLS)
    monkeypatch.chdir(tmp_path)

    router = build(write(tmp_path / "agents.yaml", AGENTS_YAML))

    assert list(router.agents) == ["writer", "reviewer", "desk"] and router.default == "desk"
    writer, reviewer, desk = router.agents.values()
    assert writer.description == "Writes the article."
    assert list(writer.tools) == ["shout"] and list(reviewer.tools) == []
    assert isinstance(desk, AgentGroup) and isinstance(desk.strategy, DirectTurns)
    assert desk.max_rounds == 4 and isinstance(writer.model, DemoModel)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "agents:\n  writer:\n    tools: []\n  reviewer:\n    tool: []\n",
            "line 5: agents.reviewer.tool: Extra inputs are not permitted",
        ),
        (
            "agents:\n  writer: {}\ngroups:\n  desk:\n    agents: [writer]\n    max_rounds: 0\n",
            "line 6: groups.desk.max_rounds: Input should be greater than or equal to 1",
        ),
        ("agents:\n  writer: {tools: [}\n", "line 2, column 20: not valid YAML: expected the"),
        (
            "agents:\n  writer: {}\n  writer: {}\n",
            "line 3: the key 'writer' appears twice in one mapping (first on line 2)",
        ),
        (
            "agents:\n  a: {}\n  b:\n    model: openai/b\n    api_key_env: NOT_SET_KEY\n",
            "line 3: agent 'b': api_key_env names NOT_SET_KEY, which is not set",
        ),
        (
            "agents:\n  a: {}\n  b:\n    mcp: true\n",
            "line 4: agent 'b' has \"mcp\": true, but no --mcp CONFIG.json is given",
        ),
        ("- a\n- b\n", "expected an object with an 'agents' object"),
    ],
    ids=["extra key", "bad value", "syntax", "duplicate key", "key not set", "mcp", "list"],
)
def test_a_yaml_file_s_problems_name_their_line(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path / "agents.yaml", text)

    message = refusal(path)

    assert message.startswith(f"--agents {path}: {problem}"), message
    assert "\n" not in message


def test_an_agent_tools_module_that_is_not_there_names_the_agent_and_its_line(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "agents.yml", "agents:\n  a: {}\n  b:\n    tools: [no_such_mod_x]\n")

    message = refusal(path)

    assert message.startswith(f"--agents {path}: line 4: agent 'b': cannot import tools from")


def test_an_unknown_model_names_the_agent_and_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "agents.json", {"agents": {"a": {}, "b": {"model": "no-such-9"}}})

    message = refusal(path)

    assert message.startswith(
        f"--agents {path}: agent 'b': unknown model 'no-such-9': no provider known for it"
    )


def test_a_bad_model_of_the_flags_is_the_flag_s_not_the_agent_s(tmp_path: Path) -> None:
    path = write(tmp_path / "agents.json", {"agents": {"a": {}}})

    assert refusal(path, "--model", "no-such-9").startswith("--model: unknown model 'no-such-9'")
    assert refusal(path, env={"LLM_MODEL": "no-such-9"}).startswith(
        "LLM_MODEL: unknown model 'no-such-9'"
    )


def test_a_json_syntax_error_names_its_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path / "agents.json", '{"agents": {"a": {}},\n  "default": }\n')

    assert refusal(path) == (f"--agents {path}: line 2, column 14: not valid JSON: Expecting value")


def test_yaml_needs_pyyaml_and_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # as if PyYAML were not installed
    path = write(tmp_path / "agents.yaml", AGENTS_YAML)

    assert refusal(path) == f"--agents {path}: a YAML file needs PyYAML: pip install pyyaml"


def test_a_yaml_flows_file_s_problems_name_their_line(tmp_path: Path) -> None:
    flows = write(
        tmp_path / "flows.yaml",
        "flows:\n  f:\n    start: a\n    nodes:\n      a: {agent: default}\n"
        "      b: {agent: nobody}\n",
    )
    args = build_parser().parse_args(["serve", "--flows", flows])

    with pytest.raises(CliError) as caught:
        build_service(ServeConfig.from_args(args, {}))

    assert str(caught.value).startswith(
        f"--flows {flows}: line 6: flow 'f': node 'b' names the agent 'nobody', which is not served"
    )


def test_a_flows_model_node_with_an_unknown_model_names_the_node(tmp_path: Path) -> None:
    flows = write(
        tmp_path / "flows.yaml",
        "flows:\n  f:\n    start: m\n    nodes:\n      m: {model: no-such-9}\n",
    )
    args = build_parser().parse_args(["serve", "--flows", flows])

    with pytest.raises(CliError) as caught:
        build_service(ServeConfig.from_args(args, {}))

    assert str(caught.value).startswith(
        f"--flows {flows}: line 5: flow 'f': node 'm': unknown model 'no-such-9'"
    )


KNOWLEDGE = "# Refunds\n\nRefunds take 30 days.\n\n# Shipping\n\nParcels ship on Mondays.\n"


async def test_each_agent_gets_its_own_retrieval_folder_or_the_flag_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("bm25s")
    for folder in ("kb", "other"):
        (tmp_path / folder).mkdir()
    write(tmp_path / "kb" / "policies.md", KNOWLEDGE)
    write(tmp_path / "other" / "notes.txt", "Parcels are wrapped in paper.\n")
    monkeypatch.chdir(tmp_path)
    path = write(
        tmp_path / "agents.yaml",
        "agents:\n  own: {retrieval: other}\n  flag: {}\n  none: {retrieval: false}\n",
    )

    router = build(path, "--retrieval", "kb")
    sources = {
        name: [
            source.source
            for source in (await _ask(router.agents[name], "when do parcels ship?")).sources
        ]
        for name in ("own", "flag", "none")
    }
    await router.aclose()

    assert sources == {"own": ["notes.txt"], "flag": ["policies.md#shipping"], "none": []}


async def _ask(agent: AgentExecutor, question: str) -> AgentResult:
    result = await agent.execute(AgentCommand(user_prompt=question))
    assert result.error is None, result.error
    return result


def test_an_agent_s_retrieval_folder_that_is_not_there_names_the_agent(tmp_path: Path) -> None:
    path = write(tmp_path / "agents.yaml", "agents:\n  a:\n    retrieval: nowhere_dir\n")

    assert refusal(path) == (
        f"--agents {path}: line 2: agent 'a': retrieval: no such folder: nowhere_dir"
    )
