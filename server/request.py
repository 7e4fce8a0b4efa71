"""What every endpoint reads from a request: its JSON body or query, validated, and the
:class:`Caller` (who asks, from where, with which headers).

Native and OpenAI-compatible endpoints share these, each answering problems in its own error
shape (the ``error`` argument: :func:`~server.errors.json_error` or
:func:`~server.errors.openai_error`).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy
from pydantic import BaseModel, ValidationError

from agent_executor import AgentCommand, AgentResult, ErrorCode, EventStream, ServedAgent

from .errors import RETRY_AFTER_SECONDS, json_error
from .schemas import describe_validation_error
from .state import AUTH_USER, REQUEST_ID, STATE, TRUSTED_PROXIES

__all__ = [
    "Caller",
    "ErrorFactory",
    "admission_refusal",
    "json_object",
    "query_object",
    "validated",
]

_Model = TypeVar("_Model", bound=BaseModel)
_Networks = tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]


class ErrorFactory(Protocol):
    """Makes an endpoint's error response: ``json_error``, ``openai_error`` or
    ``bot_server_error``; ``code`` names the error where the status alone does not."""

    def __call__(
        self, status: int, message: str, *, code: str | None = None, **headers: str
    ) -> web.Response: ...


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sent a request, as a run sees it: the request id (logs, ``X-Request-Id``), the
    client's address (rate limits by address) and the headers tools may read; ``user`` is the
    API key's user, else ``X-User-Id`` (without API keys requests are not authenticated)."""

    request_id: str
    address: str | None
    headers: Mapping[str, str]
    user: str | None

    @classmethod
    def of(cls, request: web.Request) -> Caller:
        """The caller of ``request`` (after the middlewares gave it an id and a user)."""
        return cls(
            request_id=request[REQUEST_ID],
            address=_client_address(request),
            headers=_tool_headers(request),
            user=request.get(AUTH_USER) or request.headers.get("X-User-Id") or None,
        )

    def user_id(self, given: str | None) -> str | None:
        """Whose request this is: :attr:`user`, else the id the request itself gives."""
        return self.user or given

    async def run(self, executor: ServedAgent, command: AgentCommand) -> AgentResult:
        """Run ``command`` on ``executor`` on behalf of this caller."""
        return await executor.execute(
            command,
            request_id=self.request_id,
            client_address=self.address,
            request_headers=self.headers,
        )

    def stream(self, executor: ServedAgent, command: AgentCommand) -> EventStream:
        """Stream ``command``'s run on ``executor`` on behalf of this caller."""
        return executor.execute_stream(
            command,
            request_id=self.request_id,
            client_address=self.address,
            request_headers=self.headers,
        )


def admission_refusal(request: web.Request, error: ErrorFactory) -> web.Response | None:
    """A 503 with ``Retry-After`` for a run the service must not start now, made by ``error``
    (every endpoint that would start one asks, after checking the request and before starting
    anything): ``unavailable`` once the app is shutting down (from the signal on, through the
    grace period; the connection is closed after the answer, so a client's next request opens
    a new one, which a load balancer sends to another replica), ``overloaded`` when one more
    stream would not leave the process descriptors enough (:mod:`.descriptors`; counted in
    ``agent_executor_sse_streams_refused_total``; the connection is closed after the answer
    too, since the budget does not count idle kept-alive connections)."""
    state = request.app[STATE]
    retry = {"Retry-After": str(RETRY_AFTER_SECONDS)}
    if state.streams.shutting_down:
        response = error(503, "the server is shutting down", **retry)
        response.force_close()
        return response
    in_use = state.requests_in_flight + len(state.streams.runs)
    if not state.descriptors.admits(in_use):
        state.metrics.sse_refused.labels("descriptors").inc()
        message = "the service has too many open streams: try again shortly"
        response = error(503, message, code=ErrorCode.OVERLOADED.value, **retry)
        response.force_close()  # an idle kept-alive connection would hold a descriptor
        return response
    return None


async def json_object(
    request: web.Request,
    error: ErrorFactory = json_error,
    loads: Callable[[bytes], Any] = json.loads,
) -> dict[str, Any] | web.Response:
    """The request's body, which must be a JSON object; else a 400 made by ``error``."""
    raw = await request.read()
    try:
        data = loads(raw)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, orjson's errors
        return error(400, f"the body is not valid JSON: {exc}")
    except RecursionError:
        return error(400, "the body is not valid JSON: it is nested too deeply")
    if not isinstance(data, dict):
        return error(400, "the body must be a JSON object")
    return data


def query_object(request: web.Request) -> dict[str, Any] | web.Response:
    """The query string as a request body (``metadata`` and ``variables`` hold JSON); each key
    at most once."""
    query = request.query
    repeated = sorted({key for key in query if len(query.getall(key)) > 1})
    if repeated:
        return json_error(400, f"query parameters given more than once: {', '.join(repeated)}")
    data: dict[str, Any] = dict(query)
    for key in ("metadata", "variables"):
        if key in data:
            try:
                data[key] = json.loads(data[key])
            except (ValueError, RecursionError):
                return json_error(400, f"{key}: must be a JSON object")
    return data


def validated(
    model: type[_Model], data: Any, error: ErrorFactory = json_error
) -> _Model | web.Response:
    """``data`` as a ``model``; else a 400 naming every problem, made by ``error``."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        return error(400, describe_validation_error(exc))


def _tool_headers(request: web.Request) -> Mapping[str, str]:
    """The request's headers as tools see them (:func:`current_run_context`).

    When the caller authenticated with one of this service's API keys, ``Authorization`` carries
    that key: it is dropped so no tool (a ``RestTool`` allowlisting ``Authorization``, say) can
    pass the service's own credential on to another host.
    """
    if AUTH_USER not in request:
        return request.headers
    headers = CIMultiDict(request.headers)
    headers.popall("Authorization", None)
    return CIMultiDictProxy(headers)


def _client_address(request: web.Request) -> str | None:
    """The client's address: the connection's peer, or, when the peer is a trusted proxy, the
    nearest untrusted address in ``X-Forwarded-For`` (read from the right)."""
    peer = request.remote
    trusted = request.app[TRUSTED_PROXIES]
    if not trusted or peer is None or not _is_trusted(peer, trusted):
        return peer
    chain = [
        part.strip()
        for value in request.headers.getall("X-Forwarded-For", [])
        for part in value.split(",")
        if part.strip()
    ]
    for address in reversed(chain):
        if not _is_trusted(address, trusted):
            return address if _is_ip(address) else peer
    return chain[0] if chain and _is_ip(chain[0]) else peer


def _is_trusted(address: str, networks: _Networks) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def _is_ip(address: str) -> bool:
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return False
    return True
