"""Serving a fake on 127.0.0.1: one helper for every stand-in the tests start."""

from __future__ import annotations

import socket

from aiohttp import web

__all__ = ["serve_locally"]


async def serve_locally(
    app: web.Application, host: str = "127.0.0.1", port: int = 0
) -> tuple[web.AppRunner, int]:
    """Run ``app`` on ``port`` of ``host`` (a free one by default); returns the runner (to clean
    up) and the port."""
    runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    port = int(sock.getsockname()[1])
    await web.SockSite(runner, sock).start()
    return runner, port
