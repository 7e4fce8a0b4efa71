"""The distribution (issue 19): what the wheel holds, under which names, and what a missing
extra says.

The wheel ships the repository's ``server/`` as ``agent_executor_server``, so no top-level
``server`` lands in site-packages; the checkout keeps ``server/`` (``python -m server``). A
feature imported without its extra names the extra to install.
"""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from agent_executor._extras import EXTRAS, requires_extra
from agent_executor.errors import ConfigurationError, MissingExtraError

ROOT = Path(__file__).resolve().parents[1]

BLOCKER = """
import importlib.abc, sys

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
"""
"""Makes the given top-level modules look uninstalled in a fresh interpreter."""


def _run(code: str, *, cwd: Path = ROOT, path: Path | None = None) -> str:
    env = None if path is None else {"PYTHONPATH": str(path), "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# ---------------------------------------------------------------- missing extras

USES = [
    ("mcp", "agent_executor.tools.mcp", "import agent_executor.tools.mcp"),
    ("mcp", "agent_executor.tools.mcp", "from agent_executor.tools.mcp import MCPToolset"),
    ("slack", "agent_executor.integrations.slack", "import agent_executor.integrations.slack"),
    ("redis", "agent_executor.redis", "from agent_executor.redis import RedisConversationStore"),
    ("redis", "agent_executor.redis", "from agent_executor import redis"),
    (
        "otel",
        "tracing (AgentExecutor(tracer=...))",
        "from agent_executor import AgentExecutor, ScriptedModel\n"
        "    AgentExecutor(model=ScriptedModel(), tracer=True)",
    ),
    (
        "onnx",
        "ONNXClassifier",
        "from agent_executor.guards.classifiers import ONNXClassifier\n"
        "    ONNXClassifier('model.onnx')",
    ),
]


@pytest.mark.parametrize(("extra", "feature", "statement"), USES)
def test_a_feature_without_its_extra_names_the_extra(
    extra: str, feature: str, statement: str
) -> None:
    code = BLOCKER.format(blocked=sorted(EXTRAS[extra])) + (
        f"try:\n    {statement}\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, isinstance(exc, ModuleNotFoundError))\n"
        "    print(exc)\n"
    )

    kind, message, _ = _run(code).split("\n")

    assert kind == "MissingExtraError True"
    assert message.startswith(
        f'{feature} needs the "{extra}" extra: pip install "agent-executor[{extra}]" ('
    )
    assert message.endswith(" is missing)")
    assert message.split(" (")[-1].removesuffix(" is missing)") in EXTRAS[extra]


def test_the_library_and_the_service_import_without_any_extra() -> None:
    every = sorted(set().union(*EXTRAS.values()))
    code = BLOCKER.format(blocked=every) + (
        "import agent_executor, agent_executor.guards.classifiers, server, server.cli\nprint('ok')"
    )

    assert _run(code) == "ok\n"


def test_a_missing_module_of_no_extra_is_not_renamed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "not_part_of_an_extra", None)

    with pytest.raises(ModuleNotFoundError) as raised, requires_extra("slack", "here"):
        importlib.import_module("not_part_of_an_extra")

    assert type(raised.value) is ModuleNotFoundError


def test_a_missing_extra_is_an_import_error_and_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "slack_sdk", None)

    with pytest.raises(MissingExtraError) as raised, requires_extra("slack", "the feature"):
        importlib.import_module("slack_sdk")

    assert isinstance(raised.value, ImportError)
    assert isinstance(raised.value, ConfigurationError)
    assert raised.value.name == "slack_sdk"
    assert str(raised.value) == (
        'the feature needs the "slack" extra: pip install "agent-executor[slack]" '
        "(slack_sdk is missing)"
    )


def test_the_extras_are_those_of_pyproject() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    assert set(project["optional-dependencies"]) - {"test", "interop", "dev"} == set(EXTRAS)


# ---------------------------------------------------------------- the service's own imports


def _imports_server(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and (node.module or "").split(".")[0] == "server"
    return isinstance(node, ast.Import) and any(
        alias.name.split(".")[0] == "server" for alias in node.names
    )


def test_the_service_imports_its_own_modules_relatively() -> None:
    """An absolute ``server.x`` import works in a checkout and fails once installed as
    agent_executor_server; ``python .ci/relative_imports.py`` rewrites them."""
    absolute = [
        f"{path.relative_to(ROOT).as_posix()}:{node.lineno}"
        for path in sorted((ROOT / "server").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if _imports_server(node)
    ]

    assert absolute == []


# ---------------------------------------------------------------- the wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*command, "--no-index", "-q", "-w", str(out), str(ROOT)],
        capture_output=True,
        timeout=50,
        check=True,
    )
    (built,) = out.glob("agent_executor-*.whl")
    return built


def _shipped(folder: str) -> set[str]:
    return {
        path.relative_to(ROOT / folder).as_posix()
        for path in (ROOT / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_the_wheel_ships_the_service_as_agent_executor_server(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    files = {top: {n.split("/", 1)[1] for n in names if n.startswith(top + "/")} for top in tops}
    (dist_info,) = tops - {"agent_executor", "agent_executor_server"}

    assert tops == {"agent_executor", "agent_executor_server", dist_info}
    assert files["agent_executor_server"] == _shipped("server")
    assert files["agent_executor"] == _shipped("agent_executor")
    for expected in [
        "agent_executor/py.typed",
        "agent_executor_server/py.typed",
        "agent_executor_server/static/index.html",
        "agent_executor/guards/injection/rules.json",
        "agent_executor/guards/injection/weights.json",
        "agent_executor/guards/injection/weights_tools.json",
    ]:
        assert expected in names
    scripts = zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt").decode()
    assert "agent-executor = agent_executor_server.cli:main" in scripts.splitlines()


def test_the_wheel_carries_the_guards_c_parts_where_they_were_built(wheel: Path) -> None:
    """hatch_build.py compiles _learned_native.c and _scan_native.c; a wheel with them is
    tagged for this Python and platform, one without them (no compiler) is pure Python, and CI
    has a compiler."""
    names = zipfile.ZipFile(wheel).namelist()
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    parts = [
        f"agent_executor/guards/injection/{module}{suffix}" in names
        for module in ("_learned_native", "_scan_native")
    ]
    built = all(parts)
    tag = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("/WHEEL"))).decode()

    assert built or not os.environ.get("CI")
    assert built or not any(parts)  # both or neither: one build
    assert ("Root-Is-Purelib: false" in tag) == built
    assert ("Tag: py3-none-any" in tag) != built


@pytest.mark.timeout(90)
def test_the_wheels_service_runs_without_a_server_module(wheel: Path, tmp_path: Path) -> None:
    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    code = (
        "import subprocess, sys\n"
        "import agent_executor_server.cli, agent_executor_server.app\n"
        f"print(agent_executor_server.cli.__file__.startswith({str(unpacked)!r}))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'server'))\n"
        "help = subprocess.run([sys.executable, '-m', 'agent_executor_server', '--help'],\n"
        "                      capture_output=True, text=True, check=True)\n"
        "print(help.stdout.split(' [')[0])\n"
    )

    out = _run(code, cwd=tmp_path, path=unpacked)

    assert out.splitlines() == ["True", "[]", "usage: agent-executor serve"]
