"""The layout rules of docs/architecture.md, held against the code.

A newcomer reads the tree as a map only while its rooms stay small, keep their private parts
to themselves and can be read in an order: no module imports, even indirectly, one that
imports it back (so each can be imported, tested and understood without the others in the
circle), and the old top-level paths that only hand names on say so with a deprecation
warning, so that they do not stay API for ever. These checks fail the build when a change
breaks that.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "agent_executor"
SOURCES = sorted([*(ROOT / "agent_executor").rglob("*.py"), *(ROOT / "server").rglob("*.py")])

DECLARATIVE = {"server/openapi.py:openapi_document"}
"""Functions that are tables rather than logic (the OpenAPI document)."""

STDLIB_PRIVATE = {("agent_executor/guards/injection/_parse_tree.py", "re")}
"""The rules' gates read regex parse trees; the standard library has no public parser (its old
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


def test_at_most_one_function_over_60_lines() -> None:
    long = [
        f"{path}:{node.name}"
        for path, tree in _trees()
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _length(node) > 60
    ]
    assert len(set(long) - DECLARATIVE) <= 1, long


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


# ---------------------------------------------------------------- the import graph


def _modules() -> dict[str, str]:
    """Each module of the package by dotted name: its path (a package by its ``__init__.py``)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        dotted = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[dotted] = path.relative_to(ROOT).as_posix()
    return modules


def _imported(dotted: str, path: str, tree: ast.Module) -> Iterator[tuple[str, int]]:
    """The dotted names every import statement of the module names, wherever it stands (in a
    function, under ``if TYPE_CHECKING:``), with its line: ``from pkg import name`` gives
    ``pkg.name`` (which :func:`_import_graph` takes for a submodule only if there is one),
    relative imports are resolved against the module's package."""
    package = dotted if path.endswith("__init__.py") else dotted.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            for alias in node.names:
                yield f"{base}.{alias.name}" if alias.name != "*" else base, node.lineno


def _import_graph() -> dict[str, dict[str, int]]:
    """Module path -> the package modules it imports -> the line of the first such import.

    ``from pkg import name`` is an edge to the submodule ``pkg.name`` when it exists, else to
    ``pkg``; ``import a.b.c`` is an edge to ``a.b.c`` alone, not to ``a`` and ``a.b`` (which
    Python runs first but which do not import it back by being run)."""
    modules = _modules()
    graph: dict[str, dict[str, int]] = {path: {} for path in modules.values()}
    for dotted, path in modules.items():
        for name, line in _imported(dotted, path, ast.parse((ROOT / path).read_text())):
            target = name if name in modules else name.rpartition(".")[0]
            if target in modules:
                graph[path].setdefault(modules[target], line)
    return graph


def _circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module, and the modules that
    import themselves (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    circles.append(sorted(component))
    return sorted(circles)


def _describe(circle: list[str], graph: dict[str, dict[str, int]]) -> str:
    edges = [
        f"    {source}:{line} imports {target}"
        for source in circle
        for target, line in sorted(graph[source].items())
        if target in circle
    ]
    return "\n".join([str(circle), *edges])


def test_no_import_circle_in_the_package() -> None:
    graph = _import_graph()
    circles = _circles(graph)
    report = "\n".join(_describe(circle, graph) for circle in circles)
    assert circles == [], f"modules that import each other in a circle:\n{report}"


# ---------------------------------------------------------------- old paths


def _is_warn_moved(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "warn_moved"
    )


def _hands_on(node: ast.stmt) -> bool:
    """An import, ``__all__ = ...``, or a name bound to another (``a, b = NAMES``)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(node, ast.Assign):
        names = [target.id for target in node.targets if isinstance(target, ast.Name)]
        return names == ["__all__"] or isinstance(node.value, (ast.Name, ast.Attribute))
    return isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "__all__"


def _only_re_exports(tree: ast.Module) -> bool:
    """Whether the module's body, past its docstring and any call of the deprecation helper,
    does nothing but hand on names it imports."""
    body = tree.body[1:] if ast.get_docstring(tree) is not None else tree.body
    kept = [
        node for node in body if not (isinstance(node, ast.Expr) and _is_warn_moved(node.value))
    ]
    return bool(kept) and all(_hands_on(node) for node in kept)


def test_top_level_modules_that_only_re_export_warn() -> None:
    silent = [
        path.name
        for path in sorted(PACKAGE.glob("*.py"))
        if path.name not in ("__init__.py", "_version.py")
        and _only_re_exports(tree := ast.parse(path.read_text()))
        and not any(_is_warn_moved(node) for node in ast.walk(tree))
    ]
    assert silent == [], (
        f"{silent} only hand names on: add them to agent_executor/_deprecations.py and call "
        "warn_moved(__name__), or give them code of their own"
    )
