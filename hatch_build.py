"""Build hook: an editable install gets the service under its installed name too.

The wheel ships the repository's ``server/`` folder as the package ``agent_executor_server``
(``sources`` in pyproject.toml), so the distribution puts no top-level ``server`` into
site-packages. hatchling cannot rename a package in an editable install (pypa/hatch#1887): it
only puts the checkout on ``sys.path`` (``dev-mode-dirs``), where ``server`` imports but
``agent_executor_server``, the console script's module, does not exist. For editable builds this
hook adds a one-file ``agent_executor_server`` that loads the checkout's ``server/`` in its place,
so both names run the same files, live.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

REDIRECT = '''"""``agent_executor_server`` of an editable install: the checkout's server/ package.

Written by the checkout's hatch_build.py; the wheel ships the real package instead.
"""

import importlib.util
import sys

_spec = importlib.util.spec_from_file_location(
    __name__, {init!r}, submodule_search_locations=[{folder!r}]
)
_module = importlib.util.module_from_spec(_spec)
sys.modules[__name__] = _module
_spec.loader.exec_module(_module)
'''


class EditableServerHook(BuildHookInterface):  # type: ignore[type-arg]
    """Adds the ``agent_executor_server`` redirect to editable wheels (regular wheels untouched)."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version != "editable":
            return
        folder = Path(self.root, "server").resolve()
        self._scratch = tempfile.TemporaryDirectory()
        redirect = Path(self._scratch.name, "__init__.py")
        redirect.write_text(REDIRECT.format(init=str(folder / "__init__.py"), folder=str(folder)))
        build_data["force_include_editable"][str(redirect)] = "agent_executor_server/__init__.py"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if version == "editable":
            self._scratch.cleanup()
