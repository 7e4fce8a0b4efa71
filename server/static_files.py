"""``GET /static/{path}``: the chat page's own scripts and styles (and its vendored libraries).

Only the ``.js`` and ``.css`` files found under ``server/static/`` when the module is imported
are served, looked up by name (so no path from a request ever reaches the file system); any
other path is a 404. Like the page itself they need no API key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from .state import STATIC_DIR

__all__ = ["PUBLIC_HANDLERS", "add_static_routes"]

_CONTENT_TYPES = {".js": "text/javascript", ".css": "text/css"}


def _served_files(root: Path) -> dict[str, Path]:
    """The files under ``root`` a browser may ask for, by their path relative to ``root``."""
    return {
        path.relative_to(root).as_posix(): path
        for path in sorted(root.rglob("*"))
        if path.suffix in _CONTENT_TYPES and path.is_file()
    }


_FILES = _served_files(STATIC_DIR)


def add_static_routes(app: web.Application) -> None:
    """Register ``GET /static/{path}`` on ``app``."""
    app.router.add_get("/static/{path:.+}", static_file)


async def static_file(request: web.Request) -> web.FileResponse:
    """One of the page's files; revalidated on every load (``no-cache``) so an upgrade shows."""
    path = _FILES.get(request.match_info["path"])
    if path is None:
        raise web.HTTPNotFound()
    return web.FileResponse(
        path,
        headers={
            "Content-Type": f"{_CONTENT_TYPES[path.suffix]}; charset=utf-8",
            "Cache-Control": "no-cache",
            "X-Content-Type-Options": "nosniff",
        },
    )


PUBLIC_HANDLERS: frozenset[Callable[[web.Request], Awaitable[web.StreamResponse]]] = frozenset(
    {static_file}
)
"""Handlers that need no API key."""
