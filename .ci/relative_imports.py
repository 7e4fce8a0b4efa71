"""Rewrite absolute imports of the service's own modules inside server/ as relative ones.

The wheel installs server/ as ``agent_executor_server`` (pyproject.toml), so a module in it that
imports ``server.x`` works in a checkout and fails once installed. Run from the repository root
after merging a branch that added one (tests/test_packaging.py fails until then), then let ruff
re-sort the imports:

    python .ci/relative_imports.py && ruff check --select I --fix server && ruff format server

``from server.x import y`` becomes ``from .x import y`` (as many dots as the package needs);
``import server.x.y as z`` becomes ``from .x import y as z``. A bare ``import server.x`` (used as
``server.x.name``) cannot be rewritten line by line: it is listed and the exit status is 1.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

PACKAGE = "server"
FROM_RE = re.compile(rf"^(\s*from\s+){PACKAGE}((?:\.\w+)*)(\s+import\b)")
IMPORT_AS_RE = re.compile(rf"^(\s*)import\s+{PACKAGE}((?:\.\w+)*)\.(\w+)(\s+as\s+\w+\s*)$")


def relative(package: list[str], target: list[str]) -> str:
    """``target`` (a dotted module as parts) as seen from inside ``package``: ``..x``."""
    common = 0
    while common < min(len(package), len(target)) and package[common] == target[common]:
        common += 1
    return "." * (len(package) - common + 1) + ".".join(target[common:])


def rewrite(path: Path, root: Path) -> tuple[str, list[str]]:
    """The file's text with its own-package imports made relative, and the lines left alone."""
    package = list(path.relative_to(root).parent.parts)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    manual: list[str] = []
    for node in ast.walk(ast.parse("".join(lines))):
        index = getattr(node, "lineno", 0) - 1
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            top = (node.module or "").split(".")
            if top[0] == PACKAGE:
                lines[index] = FROM_RE.sub(
                    lambda m: m[1] + relative(package, [PACKAGE, *m[2].split(".")[1:]]) + m[3],
                    lines[index],
                )
        elif isinstance(node, ast.Import) and any(
            alias.name.split(".")[0] == PACKAGE for alias in node.names
        ):
            match = IMPORT_AS_RE.match(lines[index].rstrip("\n"))
            if match is None:
                manual.append(f"{path}:{index + 1}: {lines[index].strip()}")
                continue
            parent = relative(package, [PACKAGE, *match[2].split(".")[1:]])
            alias = "" if match[4].split()[1] == match[3] else match[4].rstrip()
            lines[index] = f"{match[1]}from {parent} import {match[3]}{alias}\n"
    return "".join(lines), manual


def main(root: Path) -> int:
    manual: list[str] = []
    for path in sorted((root / PACKAGE).rglob("*.py")):
        text, left = rewrite(path, root)
        manual += left
        if text != path.read_text(encoding="utf-8"):
            path.write_text(text, encoding="utf-8")
            print(f"rewrote {path.relative_to(root)}")
    for line in manual:
        print(f"rewrite by hand: {line}", file=sys.stderr)
    return 1 if manual else 0


if __name__ == "__main__":
    sys.exit(main(Path.cwd()))
