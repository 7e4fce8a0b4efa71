"""The old import paths of ``agent_executor._deprecations.MOVED`` still work, and warn.

Each old path hands on the very objects of its new one and raises a ``DeprecationWarning``
that names the new path and the release that removes the old one, pointing at the line that
imported it; every row of the table leads somewhere that exists.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from types import ModuleType

import pytest

from agent_executor import _deprecations
from agent_executor._deprecations import MOVED, REMOVED_IN, Moved
from agent_executor._version import __version__

MODULES = [row for row in MOVED if row.old_name is None]
NAMES = [row for row in MOVED if row.old_name is not None]


def _fresh_import(module: str) -> ModuleType:
    """Import ``module`` again, as if for the first time (its body runs, so it warns again);
    called here, not through importlib, so that the warning points at this file."""
    sys.modules.pop(module, None)
    return __import__(module, fromlist=["__name__"])


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def _warns(row: Moved) -> pytest.WarningsRecorder:
    return pytest.warns(DeprecationWarning, match=re.escape(row.message()))


@pytest.mark.parametrize("row", MODULES, ids=[row.old for row in MODULES])
def test_an_old_module_hands_on_the_new_modules_objects(row: Moved) -> None:
    with _warns(row):
        old = _fresh_import(row.old_module)
    new = importlib.import_module(row.new_module)

    missing = object()
    differing = [
        name for name in old.__all__ if getattr(old, name) is not getattr(new, name, missing)
    ]
    assert differing == [], f"{row.old} hands on other objects than {row.new}: {differing}"


@pytest.mark.parametrize("row", MODULES, ids=[row.old for row in MODULES])
def test_an_old_module_warns_at_the_line_that_imports_it(row: Moved) -> None:
    with _warns(row) as caught:
        _fresh_import(row.old_module)

    assert [(w.category, w.filename) for w in caught] == [(DeprecationWarning, __file__)]


def test_the_warning_names_the_new_module_and_the_release() -> None:
    with pytest.warns(DeprecationWarning, match="is deprecated") as caught:
        _fresh_import("agent_executor.injection")

    assert str(caught[0].message) == (
        f"agent_executor.injection is deprecated and will be removed in {REMOVED_IN}; "
        "import from agent_executor.guards.injection"
    )


@pytest.mark.parametrize("row", NAMES, ids=[row.old for row in NAMES])
def test_an_old_name_hands_on_the_new_object_and_warns_where_it_is_asked_for(
    row: Moved,
) -> None:
    old = importlib.import_module(row.old_module)
    new = importlib.import_module(row.new_module)

    with _warns(row) as caught:
        value = getattr(old, str(row.old_name))

    assert (value is getattr(new, str(row.new_name)), caught[0].filename) == (True, __file__)


def test_from_import_of_an_old_name_warns_too() -> None:
    with pytest.warns(DeprecationWarning, match="is deprecated") as caught:
        from agent_executor.approvals import ASK_USER
    from agent_executor.tools.ask_user import ASK_USER as new

    assert (ASK_USER is new, str(caught[0].message)) == (
        True,
        f"agent_executor.approvals.ASK_USER is deprecated and will be removed in {REMOVED_IN}; "
        "use agent_executor.tools.ask_user.ASK_USER",
    )


def test_a_name_the_table_does_not_hold_is_still_an_attribute_error() -> None:
    import agent_executor.approvals

    with pytest.raises(AttributeError, match="has no attribute 'AskUser'"):
        agent_executor.approvals.AskUser  # noqa: B018


def test_a_module_missing_from_the_table_cannot_warn() -> None:
    with pytest.raises(LookupError, match=re.escape("agent_executor.nowhere is not in")):
        _deprecations.warn_moved("agent_executor.nowhere")


@pytest.mark.parametrize("row", MOVED, ids=[row.old for row in MOVED])
def test_every_new_location_exists(row: Moved) -> None:
    found = importlib.util.find_spec(row.new_module) is not None and (
        row.new_name is None or hasattr(importlib.import_module(row.new_module), row.new_name)
    )
    assert found, f"{row.old} points at {row.new}, which does not exist"


def test_no_old_location_is_in_the_table_twice() -> None:
    olds = [row.old for row in MOVED]
    assert sorted({old for old in olds if olds.count(old) > 1}) == []


def test_the_old_paths_are_removed_in_a_release_still_to_come() -> None:
    late = [row.old for row in MOVED if _version(row.removed_in) <= _version(__version__)]
    assert late == [], f"release {__version__} was to remove these old paths"
