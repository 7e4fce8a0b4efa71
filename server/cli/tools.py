"""The tools the flags and the ``--agents`` file name: ``@tool`` functions of modules or
``.py`` files, and the demo tools when none are configured."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Collection, Iterable
from pathlib import Path
from types import ModuleType

from agent_executor.tools import Tool, Toolkit
from agent_executor.tools.demo import DEMO_TOOLS

from .agents_file import AgentsFile
from .errors import CliError

__all__ = ["agent_tools", "load_tools"]


def load_tools(
    modules: Iterable[str], *, where: str = "--tools", toolkits: Collection[str] | None = None
) -> list[Tool]:
    """Every :class:`Tool` defined in the named modules (or ``.py`` files), and the tools of
    every :class:`Toolkit` instance they define (only those named in ``toolkits``, when
    given); a module that cannot be imported or has no tools, or a toolkit name no module
    defines, is a :class:`CliError` starting with ``where`` (the flag, or the agents file and
    agent)."""
    tools: list[Tool] = []
    kits: dict[str, Toolkit] = {}
    for name in (part.strip() for part in modules):
        if not name:
            continue
        try:
            module = _import(name)
        except CliError as exc:
            raise CliError(f"{where}: {exc}") from exc.__cause__
        found = [value for value in vars(module).values() if isinstance(value, Tool)]
        kits.update(
            (value.toolkit_name, value)
            for value in vars(module).values()
            if isinstance(value, Toolkit)
        )
        if not found and not any(isinstance(v, Toolkit) for v in vars(module).values()):
            raise CliError(f"{where}: module {name!r} defines no @tool functions")
        tools.extend(found)
    unknown = sorted(set(toolkits or ()) - set(kits))
    if unknown:
        raise CliError(f"{where}: no toolkit named {', '.join(unknown)} (the modules define "
                       f"{', '.join(sorted(kits)) or 'none'})")  # fmt: skip
    for kit_name, kit in kits.items():
        if toolkits is None or kit_name in toolkits:
            tools.extend(kit.tools())
    return tools


def agent_tools(config: AgentsFile, default_modules: Iterable[str]) -> dict[str, list[Tool]]:
    """Each agent's own tools: its ``tools``, else the ``--tools`` ones, else (without
    ``mcp``) the demo tools. A module named by several agents is loaded once; an error names
    the agent and the file, or ``--tools`` for the agents that take its modules."""
    default_modules = tuple(default_modules)
    loaded: dict[str, list[Tool]] = {}
    tools: dict[str, list[Tool]] = {}
    for name, agent in config.agents.items():
        modules = agent.tools if agent.tools is not None else default_modules
        if agent.tools is None and not modules and not agent.mcp:
            tools[name] = list(DEMO_TOOLS)
            continue
        tools[name] = []
        if agent.toolkits is not None:  # this agent's choice of the modules' toolkits
            where = f"{config.origin('agents', name, 'toolkits')}: agent {name!r}"
            tools[name] = load_tools(modules, where=where, toolkits=agent.toolkits)
            continue
        for module in modules:
            if module not in loaded:
                where = (
                    "--tools"
                    if agent.tools is None
                    else f"{config.origin('agents', name, 'tools')}: agent {name!r}"
                )
                loaded[module] = load_tools(module.split(","), where=where)
            tools[name].extend(loaded[module])
    return tools


def _look_in_working_directory() -> None:
    """Find modules of the working directory, as ``python -m`` would: the console script
    starts without it on ``sys.path``, so ``--tools mytools`` missed ``./mytools.py``."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


def _import(name: str) -> ModuleType:
    try:
        if name.endswith(".py"):
            path = Path(name)
            spec = importlib.util.spec_from_file_location(path.stem, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {name}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
        _look_in_working_directory()
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name.partition(".")[0]:
            raise CliError(f"cannot import tools from {name!r}: {exc}") from exc
        raise CliError(
            f"cannot import tools from {name!r}: no module of that name in {Path.cwd()} "
            "or the installed packages (a file elsewhere can be named by its path, "
            "e.g. ./tools/my_tools.py)"
        ) from None
    except Exception as exc:
        raise CliError(f"cannot import tools from {name!r}: {exc}") from exc
