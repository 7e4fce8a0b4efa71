"""Mount the agent service inside your own aiohttp application, under ``/agent/``.

Your routes stay yours; the agent's endpoints (``/agent/api/chat/stream``, ``/agent/v1/...``,
the chat page at ``/agent/``) come from ``server.create_app``. Run it and open
http://127.0.0.1:8080/ and http://127.0.0.1:8080/agent/ ::

    python examples/aiohttp_mount.py
"""

from __future__ import annotations

from aiohttp import web

from agent_executor import AgentExecutor, Concurrency
from agent_executor.tools.demo import DEMO_TOOLS
from server import Settings, create_app


async def home(request: web.Request) -> web.Response:
    """A route of your own application."""
    return web.Response(text="My app. The agent lives at /agent/\n")


def build_app() -> web.Application:
    """Your application, with the agent service mounted under ``/agent/``."""
    executor = AgentExecutor(
        model="demo", tools=DEMO_TOOLS, concurrency=Concurrency(max_concurrency=32)
    )
    app = web.Application()
    app.router.add_get("/", home)
    app.add_subapp("/agent/", create_app(executor, Settings(heartbeat_seconds=15)))
    return app


if __name__ == "__main__":
    # handler_cancellation: a client that leaves cancels its run at once
    web.run_app(build_app(), host="127.0.0.1", port=8080, handler_cancellation=True)
