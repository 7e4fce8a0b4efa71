"""Prompt templates: a command's ``variables`` rendered into the agent's system prompt and the
user's message, with Mustache (``{{name}}``, ``{{#list}}...{{/list}}``), a logic-less template
language.

Values are put in as they are, never read as template syntax (a value ``{{secret}}`` stays that
text), and nothing is HTML-escaped: prompts are not HTML. A template that names a variable the
command does not give is refused (``invalid_input``) rather than rendered with a gap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pystache
from pystache.context import KeyNotFoundError

__all__ = ["TemplateError", "render"]

_RENDERER = pystache.Renderer(escape=lambda text: text, missing_tags="strict")


class TemplateError(ValueError):
    """A template that cannot be rendered with the variables given."""


def render(template: str, variables: Mapping[str, Any]) -> str:
    """``template`` with ``variables`` put in (see the module docstring)."""
    if "{{" not in template:
        return template
    try:
        return str(_RENDERER.render(template, dict(variables)))
    except KeyNotFoundError as exc:
        raise TemplateError(f"the template names a variable not given: {exc.key}") from None
    except Exception as exc:  # pystache's parse errors have no common base
        raise TemplateError(f"the template cannot be rendered: {exc}") from None
