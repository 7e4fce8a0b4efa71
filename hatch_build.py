"""Build hook: the injection guard's C parts, and the service under its installed name.

**The C parts.** ``agent_executor/guards/injection/_learned_native.c`` sums the learned
injection layer's weights from one flat table, and ``_scan_native.c`` finds the strings the
rules' gates need in one compact automaton (docs/benchmarks.md: the guard's cost in a busy
service). Every wheel, editable or not, compiles them with the platform's C compiler through
setuptools, into the source tree beside the Python modules, and the wheel carries them. Where
the build fails (no compiler, no Python headers) a warning is shown and the install goes on:
the Python modules do the same work themselves (the sums in Python, the search with
pyahocorasick). ``AGENT_EXECUTOR_NO_NATIVE=1`` skips the build.

**The service's name.** The wheel ships the repository's ``server/`` folder as the package
``agent_executor_server`` (``sources`` in pyproject.toml), so the distribution puts no
top-level ``server`` into site-packages. hatchling cannot rename a package in an editable
install (pypa/hatch#1887): it only puts the checkout on ``sys.path`` (``dev-mode-dirs``), where
``server`` imports but ``agent_executor_server``, the console script's module, does not exist.
For editable builds this hook adds a one-file ``agent_executor_server`` that loads the
checkout's ``server/`` in its place, so both names run the same files, live.
"""

from __future__ import annotations

import os
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


NATIVE = {
    "agent_executor.guards.injection._learned_native": (
        "agent_executor/guards/injection/_learned_native.c"
    ),
    "agent_executor.guards.injection._scan_native": (
        "agent_executor/guards/injection/_scan_native.c"
    ),
}
"""The C parts: module name -> source."""


def build_native(root: str) -> list[Path]:
    """Compile the C parts that ``root`` has into its source tree; their paths. Raises where
    they cannot be built."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    extensions = [
        Extension(name, [source], extra_compile_args=["-O2"])
        for name, source in NATIVE.items()
        if Path(root, source).exists()
    ]
    command = build_ext(Distribution({"ext_modules": extensions, "script_name": "hatch_build"}))
    command.inplace = True
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        command.build_temp = scratch  # the object files, not left in the checkout
        command.ensure_finalized()
        os.chdir(root)  # build_ext writes in place relative to the working directory
        try:
            command.run()
        finally:
            os.chdir(here)
    return [Path(root, command.get_ext_fullpath(extension.name)) for extension in extensions]


class BuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Compiles the C part into every wheel; adds the ``agent_executor_server`` redirect to
    editable ones."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if os.environ.get("AGENT_EXECUTOR_NO_NATIVE") != "1":
            self._native(version, build_data)
        if version == "editable":
            self._redirect(build_data)

    def _native(self, version: str, build_data: dict[str, Any]) -> None:
        try:
            built = build_native(self.root)
        except Exception as exc:  # any failure leaves the Python fallback
            self.app.display_warning(
                f"agent-executor: the C parts of the injection guard were not built ({exc}); "
                "the guard runs in Python and costs more CPU (docs/guards.md)"
            )
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if version != "editable":  # an editable install imports them from the source tree
            for path in built:
                build_data["force_include"][str(path)] = path.relative_to(self.root).as_posix()

    def _redirect(self, build_data: dict[str, Any]) -> None:
        folder = Path(self.root, "server").resolve()
        self._scratch = tempfile.TemporaryDirectory()
        redirect = Path(self._scratch.name, "__init__.py")
        redirect.write_text(REDIRECT.format(init=str(folder / "__init__.py"), folder=str(folder)))
        build_data["force_include_editable"][str(redirect)] = "agent_executor_server/__init__.py"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if version == "editable":
            self._scratch.cleanup()
