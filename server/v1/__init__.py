"""The OpenAI-compatible endpoints under ``/v1``: an agent, group or flow as an OpenAI model.

``POST /v1/chat/completions`` (:mod:`.chat`) and ``POST /v1/responses`` (:mod:`.responses`)
share one mapping of conversations, client tools and response formats onto a run
(:mod:`.conversation`); ``GET /v1/models`` lists what the ``model`` field may name.
"""

from __future__ import annotations

from aiohttp import web

from ..errors import openai_error
from ..state import AGENTS
from .chat import chat_completions
from .common import CREATED
from .responses import create_response

__all__ = ["add_v1_routes"]


def add_v1_routes(app: web.Application) -> None:
    """Register the OpenAI-compatible endpoints on ``app``."""
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_post("/v1/responses", create_response)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/v1/models/{model}", model)


def _names(request: web.Request) -> list[str]:
    agents = request.app[AGENTS]
    return ["default", *sorted(n for n in agents.agents if n != "default")]


def _model(name: str) -> dict[str, object]:
    return {"id": name, "object": "model", "created": CREATED, "owned_by": "agent-executor"}


async def models(request: web.Request) -> web.Response:
    """The configured agents, groups and flows, in OpenAI's list shape."""
    return web.json_response({"object": "list", "data": [_model(n) for n in _names(request)]})


async def model(request: web.Request) -> web.Response:
    """One of them, or OpenAI's 404."""
    name = request.match_info["model"]
    if name not in _names(request):
        return openai_error(
            404, f"The model `{name}` does not exist", code="model_not_found", param="model"
        )
    return web.json_response(_model(name))
