"""Start-up refuses what cannot work: one line on stderr, exit status 2 (issue 19, item 1).

Each case starts the real service process (``python -m server``) as an operator would.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agent_executor import __version__

from .server_helpers import ROOT


def _serve(
    *argv: str, env: dict[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m server argv``; ``env`` adds variables, or removes those set to ``None``."""
    merged: dict[str, str | None] = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "server", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        env={name: value for name, value in merged.items() if value is not None},
    )


def _refused(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a refusal printed (and nothing else on stderr)."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("agent-executor: ")
    return lines[0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "holds no keys"),
        ("# nobody yet\n\n", "holds no keys"),
        ("alice=k\nbob=k\n", "line 2 repeats the key of line 1 (users 'alice' and 'bob')"),
    ],
)
def test_an_api_keys_file_without_usable_keys_is_refused(
    tmp_path: Path, content: str, message: str
) -> None:
    keys = tmp_path / "keys"
    keys.write_text(content, encoding="utf-8")

    line = _refused(_serve("--port", "0", "--api-keys-file", str(keys)))

    assert f"--api-keys-file {keys}" in line
    assert message in line


def test_api_keys_from_the_environment_without_keys_are_refused() -> None:
    line = _refused(_serve("--port", "0", env={"AGENT_API_KEYS": "# none\n"}))

    assert "AGENT_API_KEYS holds no keys" in line


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--request-timeout", "-5"], "--request-timeout must be positive, not -5"),
        (["--request-timeout", "0"], "--request-timeout must be positive, not 0"),
        (["--heartbeat", "0"], "--heartbeat must be positive, not 0"),
        (["--max-concurrency", "0"], "--max-concurrency must be positive, not 0"),
        (["--history-max-tokens", "-1"], "--history-max-tokens must be positive, not -1"),
        (["--max-tool-calls", "-1"], "--max-tool-calls must be 0 or more, not -1"),
        (["--max-input-tokens", "0"], "--max-input-tokens must be positive, not 0"),
        (["--max-output-tokens", "-3"], "--max-output-tokens must be positive, not -3"),
        (["--max-cost-usd", "0"], "--max-cost-usd must be positive, not 0"),
        (
            ["--user-budget", "5/fortnight"],
            "--user-budget: invalid budget '5/fortnight': use AMOUNT/PERIOD such as 5.00/day "
            "or 200000tokens/day (periods: hour, day, week, month)",
        ),
        (["--shutdown-grace", "-2"], "--shutdown-grace must be 0 or more, not -2"),
        (["--port", "70000"], "--port must be between 0 and 65535, not 70000"),
        (["--max-body-bytes", "0"], "--max-body-bytes must be positive, not 0"),
        (["--max-message-chars", "-1"], "--max-message-chars must be positive, not -1"),
        (
            ["--rate-limit", "20/fortnight"],
            "--rate-limit: invalid rate '20/fortnight': use N/PERIOD such as 20/minute, "
            "5/second or 100/hour",
        ),
    ],
)
def test_timeouts_and_limits_that_cannot_work_are_refused(argv: list[str], message: str) -> None:
    assert _refused(_serve(*argv)) == f"agent-executor: {message}"


def test_a_busy_port_is_one_line_not_a_traceback() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        result = _serve("--port", str(port))

    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith(f"agent-executor: cannot listen on 127.0.0.1:{port}: ")
    )


@pytest.mark.parametrize("argv", [["--version"], ["serve", "--version"]])
def test_version(argv: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from server.cli import main; sys.exit(main())", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert (result.returncode, result.stdout.strip()) == (0, f"agent-executor {__version__}")


_NO_KEYS: dict[str, str | None] = dict.fromkeys(
    ("LLM_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LLM_MODEL", "LLM_BASE_URL")
)
"""Variables removed from the environment (``None``)."""


def test_a_model_no_provider_knows_is_refused() -> None:
    line = _refused(_serve("--port", "0", "--model", "nonexistent-model-9", env=_NO_KEYS))

    assert "unknown model 'nonexistent-model-9': no provider known for it" in line
    assert "--api-base" in line


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"),  # through litellm
        ("openai/gpt-4o-mini", "OPENAI_API_KEY"),  # the fast client
    ],
)
def test_a_provider_model_without_a_key_is_refused_naming_the_variable(
    model: str, variable: str
) -> None:
    line = _refused(_serve("--port", "0", "--model", model, env=_NO_KEYS))

    assert f"model {model!r}" in line
    assert variable in line
    assert "LLM_API_KEY" in line
    assert "--api-key-file" in line


def test_an_empty_api_key_file_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "key"
    empty.write_text("\n\n", encoding="utf-8")

    line = _refused(
        _serve("--port", "0", "--model", "openai/gpt-4o-mini", "--api-key-file", str(empty))
    )

    assert line == f"agent-executor: --api-key-file {empty} is empty"


def test_settings_problems_name_the_flag_not_the_field() -> None:
    line = _refused(_serve("--port", "0", "--trusted-proxies", "not-a-network"))

    assert line.startswith("agent-executor: --trusted-proxies: ")
    assert "trusted_proxies" not in line


def test_a_tools_module_that_is_not_there_says_where_it_looked(tmp_path: Path) -> None:
    line = _refused(_serve("--port", "0", "--tools", "no_such_tools_module"))

    assert "cannot import tools from 'no_such_tools_module'" in line
    assert str(ROOT) in line


@pytest.mark.parametrize(
    ("agents", "message"),
    [
        ({"a": {"handoffs": ["b"]}}, "agent 'a': handoffs names 'b', which is not one of"),
        ({"a": {"agent_tools": ["a"]}}, "agent 'a' names itself in 'agent_tools'"),
    ],
)
def test_an_agents_file_naming_an_unknown_agent_or_itself_is_refused(
    tmp_path: Path, agents: dict[str, object], message: str
) -> None:
    path = tmp_path / "agents.json"
    path.write_text(json.dumps({"agents": agents}), encoding="utf-8")

    line = _refused(_serve("--port", "0", "--agents", str(path)))

    assert line.startswith(f"agent-executor: --agents {path}: ")
    assert message in line


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read prices from"),
        ("[1]", "expected an object of model names to prices"),
        ('{"m": {"input": -1, "output": 1}}', "m.input: Input should be greater than or equal"),
    ],
)
def test_a_prices_file_that_cannot_be_used_is_refused(
    tmp_path: Path, content: str | None, message: str
) -> None:
    prices = tmp_path / "prices.json"
    if content is not None:
        prices.write_text(content, encoding="utf-8")

    line = _refused(_serve("--port", "0", "--prices", str(prices)))

    assert line.startswith("agent-executor: --prices: ")
    assert message in line


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "abc"], "--port: expected a whole number, not 'abc'"),
        (["--request-timeout", "soon"], "--request-timeout: expected a number, not 'soon'"),
        (["--port"], "--port: expected a value"),
        (
            ["--log-format", "xml"],
            "--log-format: invalid choice: 'xml' (choose from 'text', 'json')",
        ),
        (["--gc-threshold", "-1"], "--gc-threshold: must be 0 or more, not -1"),
    ],
)
def test_a_flag_that_cannot_be_read_is_one_line_not_the_usage(
    argv: list[str], message: str
) -> None:
    line = _refused(_serve(*argv))

    assert line == f"agent-executor: {message} (see agent-executor serve --help)"


def test_an_unknown_flag_is_one_line() -> None:
    line = _refused(_serve("--port", "0", "--frobnicate"))

    assert line.startswith("agent-executor: unrecognized arguments: --frobnicate (see ")


def test_a_bad_line_of_the_api_keys_file_names_the_file_and_the_line(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text("# the team\nalice\n", encoding="utf-8")

    line = _refused(_serve("--port", "0", "--api-keys-file", str(keys)))

    assert line == f"agent-executor: --api-keys-file {keys}: line 2: expected user_id=key"


def test_an_unknown_model_of_the_agents_file_names_the_agent_and_the_file(tmp_path: Path) -> None:
    path = tmp_path / "agents.json"
    path.write_text(json.dumps({"agents": {"a": {"model": "no-such-model-9"}}}), encoding="utf-8")

    line = _refused(_serve("--port", "0", "--agents", str(path), env=_NO_KEYS))

    assert line.startswith(
        f"agent-executor: --agents {path}: agent 'a': unknown model 'no-such-model-9'"
    )


def test_an_auto_group_on_the_demo_model_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "agents.yaml"
    path.write_text(
        "agents:\n  a: {}\n  b: {}\ngroups:\n  team:\n    agents: [a, b]\n    strategy: auto\n",
        encoding="utf-8",
    )

    line = _refused(_serve("--port", "0", "--agents", str(path), env=_NO_KEYS))

    assert line.startswith(
        f"agent-executor: --agents {path}: line 5: group 'team': the auto strategy's "
        "moderator is the demo model"
    )
    assert "invalid_plan" in line


@pytest.mark.parametrize("folder", ["missing", "empty"])
def test_a_retrieval_folder_without_documents_is_refused(tmp_path: Path, folder: str) -> None:
    path = tmp_path / folder
    if folder == "empty":
        path.mkdir()

    line = _refused(_serve("--port", "0", "--retrieval", str(path)))

    problem = "no such folder: " if folder == "missing" else "no .md or .txt files under "
    assert line == f"agent-executor: --retrieval: {problem}{path}"


def test_retrieval_without_its_extra_names_the_pip_install(tmp_path: Path) -> None:
    (tmp_path / "faq.md").write_text("# Refunds\n\nThey take 30 days.\n", encoding="utf-8")
    code = (
        "import sys; sys.modules['bm25s'] = None; from server.cli import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, "serve", "--port", "0", "--retrieval", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert _refused(result) == (
        "agent-executor: --retrieval needs the retrieval extra: "
        "pip install 'agent-executor[retrieval]'"
    )
