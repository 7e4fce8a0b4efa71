"""Forward ``execute_stream()`` as Server-Sent Events from a Starlette (or FastAPI) app.

For services already built on ASGI; ``pip install starlette uvicorn`` (not dependencies of
agent-executor). The events keep the service's names (``message``, ``tool_start``, ...) with
JSON data, and the stream always ends with ``done``. Leaving early cancels the run: Starlette
closes the generator when the client disconnects, and ``aclosing`` closes the run's stream. ::

    uvicorn examples.starlette_sse:app --port 8000
    curl -N 'http://127.0.0.1:8000/chat?message=weather+in+Rome'
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from agent_executor import AgentCommand, AgentExecutor, event_adapter
from agent_executor.tools.demo import DEMO_TOOLS

executor = AgentExecutor(model="demo", tools=DEMO_TOOLS)


async def sse(command: AgentCommand) -> AsyncIterator[bytes]:
    """The run's events as SSE frames (JSON data without the ``type``, which is the event)."""
    async with aclosing(executor.execute_stream(command)) as events:
        async for event in events:
            data = event_adapter.dump_json(event, exclude={"type"})
            yield b"event: " + event.type.encode() + b"\ndata: " + data + b"\n\n"


async def chat(request: Request) -> StreamingResponse:
    """``GET /chat?message=...&session_id=...``."""
    command = AgentCommand(
        user_prompt=request.query_params.get("message", ""),
        session_id=request.query_params.get("session_id"),
    )
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(sse(command), media_type="text/event-stream", headers=headers)


app = Starlette(routes=[Route("/chat", chat)])
