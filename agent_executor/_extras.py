"""The optional extras of the distribution, and the one way a feature imports from them.

A feature that needs an extra imports its modules inside :func:`requires_extra`, so a user
without the extra is told which one to install instead of which module of it is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .errors import MissingExtraError

__all__ = ["EXTRAS", "requires_extra"]

EXTRAS: dict[str, frozenset[str]] = {
    "ag-ui": frozenset({"ag_ui"}),
    "mcp": frozenset({"mcp", "httpx2"}),
    "onnx": frozenset({"numpy", "onnxruntime", "tokenizers"}),
    "otel": frozenset({"opentelemetry"}),
    "postgres": frozenset({"psycopg", "psycopg_pool"}),
    "redis": frozenset({"redis"}),
    "retrieval": frozenset({"bm25s", "numpy", "Stemmer"}),
    "slack": frozenset({"slack_sdk"}),
}
"""Each extra of pyproject.toml and the top-level modules it installs that this code imports."""


@contextmanager
def requires_extra(extra: str, feature: str) -> Iterator[None]:
    """Imports in this block come from ``extra``: if one of its modules is missing, raise
    :class:`~agent_executor.errors.MissingExtraError` naming the extra ``feature`` needs.

    Any other missing module is a different problem and propagates unchanged.
    """
    try:
        yield
    except MissingExtraError:
        raise
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if missing not in EXTRAS[extra]:
            raise
        raise MissingExtraError(
            f'{feature} needs the "{extra}" extra: pip install "agent-executor[{extra}]" '
            f"({missing} is missing)",
            name=exc.name,
        ) from None
