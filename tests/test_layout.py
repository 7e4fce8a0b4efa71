"""The layout rules of docs/architecture.md, held against the code (issue #18).

A newcomer reads the tree as a map only while its rooms stay small and keep their private
parts to themselves; these checks fail the build when a change breaks that.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*(ROOT / "agent_executor").rglob("*.py"), *(ROOT / "server").rglob("*.py")])

DECLARATIVE = {"server/openapi.py:openapi_document"}
"""Functions that are tables rather than logic (the OpenAPI document)."""

STDLIB_PRIVATE = {("agent_executor/guards/injection/word_gate.py", "re")}
"""The word gate reads regex parse trees; the standard library has no public parser (its old
public names ``sre_parse``/``sre_constants`` are deprecated and warn)."""


def _trees() -> list[tuple[str, ast.Module]]:
    return [(p.relative_to(ROOT).as_posix(), ast.parse(p.read_text())) for p in SOURCES]


def _length(node: ast.AST) -> int:
    return (node.end_lineno or 0) - getattr(node, "lineno", 0) + 1


def test_no_module_over_600_lines_and_no_class_over_300() -> None:
    big = [p.relative_to(ROOT).as_posix() for p in SOURCES if p.read_text().count("\n") > 600]
    classes = [
        f"{path}:{node.name}"
        for path, tree in _trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and _length(node) > 300
    ]
    assert (big, classes) == ([], [])


def test_at_most_two_functions_over_60_lines() -> None:
    long = [
        f"{path}:{node.name}"
        for path, tree in _trees()
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _length(node) > 60
    ]
    assert len(set(long) - DECLARATIVE) <= 2, long


def test_no_private_name_is_imported_from_another_module() -> None:
    crossings = [
        f"{path}:{node.lineno} {node.module} {alias.name}"
        for path, tree in _trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (path, node.module) not in STDLIB_PRIVATE
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]
    assert crossings == []


def test_the_package_no_longer_shadows_the_standard_logging_module() -> None:
    assert not (ROOT / "agent_executor" / "logging.py").exists()
