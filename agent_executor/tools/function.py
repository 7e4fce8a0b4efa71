"""Python functions as tools: the :func:`tool` decorator and :class:`FunctionTool`.

``@tool`` turns a sync or async function into a :class:`FunctionTool`: the JSON schema of its
parameters comes from the type hints (through pydantic, so nested models, enums, ``Optional``,
lists and ``Annotated[..., Field(description=...)]`` work), the description from the docstring
(its first paragraph; per-parameter text from an ``Args:`` section). Arguments from the model are
validated by the same pydantic model before the function runs. Sync functions run in a worker
thread so they never block the event loop.

``@tool`` on a method (in a class body, first parameter ``self``) makes a tool whose schema
leaves ``self`` out; reading it from an instance (``kit.lookup``) gives that instance's bound
tool, as a method is bound (see :class:`~agent_executor.tools.toolkit.Toolkit`).
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
import types
from collections.abc import Callable
from typing import Annotated, Any, TypeVar, get_args, get_origin, overload

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema

from ..errors import ConfigurationError
from .base import Tool, ToolArgumentsError, decode_arguments

__all__ = ["FunctionTool", "tool"]

_ARGS_HEADER_RE = re.compile(r"^(Args|Arguments|Parameters|Params):\s*$")
_ARG_LINE_RE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM_RE = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+):\s*(.*)$")

F = TypeVar("F", bound=Callable[..., Any])


class FunctionTool(Tool):
    """A Python function exposed as a tool; made by :func:`tool`. Calling it calls the function."""

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        eager: bool = False,
        requires_approval: bool = False,
    ) -> None:
        summary, arg_docs = _parse_docstring(inspect.getdoc(function) or "")
        self.function = function
        self.is_async = inspect.iscoroutinefunction(function)
        self.unbound = _is_method(function)
        """A method's tool read from its class: it needs an instance (``kit.lookup``)."""
        self._args_model = _arguments_model(function, arg_docs, skip_first=self.unbound)
        super().__init__(
            name=name or function.__name__,
            description=description or summary,
            parameters=_schema_of(self._args_model),
            timeout=timeout,
            eager=eager,
            requires_approval=requires_approval,
        )
        functools.update_wrapper(self, function)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def __get__(self, instance: object, owner: type | None = None) -> FunctionTool:
        """A method's tool read from an instance: the tool of the bound method (same name,
        description and schema); read from the class, or not a method: this tool."""
        if instance is None or not self.unbound:
            return self
        bound = copy.copy(self)
        bound.function = types.MethodType(self.function, instance)
        bound.unbound = False
        return bound

    def parse_arguments(self, raw: str) -> dict[str, Any]:
        """Decode and validate the arguments with the function's pydantic model."""
        data = decode_arguments(raw)
        try:
            validated = self._args_model.model_validate(data)
        except ValidationError as exc:
            raise ToolArgumentsError(_describe_validation_error(exc)) from None
        return {name: getattr(validated, name) for name in type(validated).model_fields}

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        """Await the function, or run it in a worker thread if it is sync."""
        if self.is_async:
            return await self.function(**arguments)
        call = functools.partial(self.function, **arguments)
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)


@overload
def tool(function: F, /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    eager: bool = False,
    requires_approval: bool = False,
) -> Callable[[F], FunctionTool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    eager: bool = False,
    requires_approval: bool = False,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a function a tool: ``@tool`` or ``@tool(name=, description=, timeout=, eager=,
    requires_approval=)``."""

    def wrap(fn: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            fn,
            name=name,
            description=description,
            timeout=timeout,
            eager=eager,
            requires_approval=requires_approval,
        )

    return wrap(function) if function is not None else wrap


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """First paragraph, and parameter descriptions from an ``Args:`` or ``:param:`` section."""
    lines = doc.splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _ARGS_HEADER_RE.match(line.strip()) or line.startswith(":"):
            break
        summary.append(line.strip())
    params: dict[str, str] = {}
    current: str | None = None
    arg_indent: int | None = None
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        sphinx = _SPHINX_PARAM_RE.match(stripped)
        if sphinx:
            current, arg_indent = sphinx.group(1), indent + 1
            params[current] = sphinx.group(2)
        elif _ARGS_HEADER_RE.match(stripped):
            current, arg_indent = None, -1
        elif arg_indent is None or not stripped:
            continue
        elif indent == 0 and arg_indent != 0:
            current, arg_indent = None, None
        elif (arg_indent == -1 or indent <= arg_indent) and (match := _ARG_LINE_RE.match(stripped)):
            current, arg_indent = match.group(1).lstrip("*"), indent
            params[current] = match.group(2)
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return " ".join(summary), params


def _is_method(function: Callable[..., Any]) -> bool:
    """Whether ``function`` was defined in a class body with ``self`` first (a method that
    ``@tool`` decorates before the class binds it)."""
    parameters = list(inspect.signature(function).parameters)
    qualname = getattr(function, "__qualname__", "")
    defined_in_class = "." in qualname and "<locals>" not in qualname.rsplit(".", 2)[-2:-1]
    return bool(parameters) and parameters[0] == "self" and defined_in_class


def _arguments_model(
    function: Callable[..., Any], docs: dict[str, str], *, skip_first: bool = False
) -> type[BaseModel]:
    """A pydantic model of the function's parameters (extra arguments are refused); a
    method's ``self`` is not one."""
    try:
        hints = inspect.get_annotations(function, eval_str=True)
    except Exception as exc:
        raise ConfigurationError(f"cannot read type hints of {function!r}: {exc}") from exc
    fields: dict[str, Any] = {}
    parameters = list(inspect.signature(function).parameters.values())
    for param in parameters[1:] if skip_first else parameters:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigurationError(
                f"tool {function.__name__!r}: *args/**kwargs cannot be described to a model"
            )
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        doc = docs.get(param.name)
        if doc and not _has_description(annotation):
            annotation = Annotated[annotation, FieldInfo(description=doc)]
        fields[param.name] = (annotation, default)
    model_name = f"{function.__name__}_arguments"
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    return create_model(model_name, __config__=config, **fields)


def _has_description(annotation: Any) -> bool:
    if get_origin(annotation) is not Annotated:
        return False
    return any(isinstance(m, FieldInfo) and m.description for m in get_args(annotation)[1:])


class _NoTitles(GenerateJsonSchema):
    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    try:
        schema = model.model_json_schema(schema_generator=_NoTitles)
    except Exception as exc:
        raise ConfigurationError(f"cannot build a JSON schema for {model.__name__}: {exc}") from exc
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def _describe_validation_error(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where}: {error['msg']}")
    return "invalid arguments: " + "; ".join(problems)
