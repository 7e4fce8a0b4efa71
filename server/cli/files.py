"""The configuration files flags name (``--agents``, ``--flows``): JSON, or YAML for ``.yaml``
and ``.yml`` files (read with PyYAML when it is installed), each problem reported with the
flag, the file and, where the format says it, the line.

JSON's parser gives the line of a syntax error only; YAML's gives the line of every value, so
a value the schema refuses is reported at its line too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .errors import CliError

__all__ = ["Document", "read_document"]

_Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Document:
    """A file's data, and the line (from 1) of each key and item by its path (YAML only)."""

    data: Any
    lines: Mapping[_Path, int] = field(default_factory=dict)

    def line_of(self, loc: Sequence[str | int]) -> int | None:
        """The line of the value at ``loc``, or of the nearest enclosing one known."""
        path = tuple(loc)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None

    def problems(self, exc: ValidationError) -> str:
        """What the schema refused, each problem with its line where known:
        ``line 7: flows.f.nodes.a: give exactly one of ...``."""
        problems = []
        for error in exc.errors(include_url=False):
            where = ".".join(str(part) for part in error["loc"])
            message = str(error["msg"]).removeprefix("Value error, ")
            line = self.line_of(error["loc"])
            problem = f"{where}: {message}" if where else message
            problems.append(f"line {line}: {problem}" if line else problem)
        return "; ".join(problems)


def read_document(path: str, what: str) -> Document:
    """The data of the file at ``path``; :class:`CliError` starting with ``what`` (the flag
    and the file) when it cannot be read or parsed, or has a key twice in one object."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"{what}: cannot read it: {exc.strerror or exc}") from None
    if path.endswith((".yaml", ".yml")):
        return _yaml(text, what)
    try:
        return Document(json.loads(text, object_pairs_hook=_no_duplicate_keys))
    except json.JSONDecodeError as exc:
        raise CliError(
            f"{what}: line {exc.lineno}, column {exc.colno}: not valid JSON: {exc.msg}"
        ) from None
    except _DuplicateKey as exc:
        raise CliError(f"{what}: {exc}") from None
    except RecursionError:
        raise CliError(f"{what}: not valid JSON: it is nested too deeply") from None


class _DuplicateKey(ValueError):
    """A key given twice in one object (JSON's parser would keep the last silently)."""


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _DuplicateKey(f"the key {key!r} appears twice in one object")
        data[key] = value
    return data


def _yaml(text: str, what: str) -> Document:
    try:
        import yaml
    except ImportError:
        raise CliError(f"{what}: a YAML file needs PyYAML: pip install pyyaml") from None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        lines = _Lines(yaml, what)
        if node is not None:
            lines.walk(node, ())
        return Document(None if node is None else loader.construct_document(node), lines.found)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = " ".join(str(exc.problem or exc.context or exc).split())
        raise CliError(f"{what}: {where}not valid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise CliError(f"{what}: not valid YAML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise CliError(f"{what}: not valid YAML: it is nested too deeply") from None
    finally:
        loader.dispose()


class _Lines:
    """The line of every key and item of a YAML node tree, by path; a key given twice in one
    mapping is refused. A node reached again through an alias is not walked again (an alias
    may refer to its own ancestor, and aliases of aliases multiply)."""

    def __init__(self, yaml: Any, what: str) -> None:
        self._yaml, self._what = yaml, what
        self.found: dict[_Path, int] = {}
        self._seen: set[int] = set()

    def walk(self, node: Any, path: _Path) -> None:
        if id(node) in self._seen:
            return
        self._seen.add(id(node))
        if isinstance(node, self._yaml.MappingNode):
            keys: dict[str, int] = {}
            for key, value in node.value:
                line = key.start_mark.line + 1
                name = str(key.value) if isinstance(key, self._yaml.ScalarNode) else str(line)
                if name in keys:
                    raise CliError(
                        f"{self._what}: line {line}: the key {name!r} appears twice in one "
                        f"mapping (first on line {keys[name]})"
                    )
                inner = (*path, name)
                keys[name] = self.found[inner] = line
                self.walk(value, inner)
        elif isinstance(node, self._yaml.SequenceNode):
            for index, item in enumerate(node.value):
                inner = (*path, index)
                self.found[inner] = item.start_mark.line + 1
                self.walk(item, inner)
