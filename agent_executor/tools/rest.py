"""REST tools: a tool that calls one HTTP endpoint, declared by hand or from an OpenAPI operation.

A call goes through small steps: check the arguments against the tool's schema, place them (path
segments, query string or JSON body), pick the headers to send, send the request on the tool's
one ``aiohttp`` session, read a bounded answer. What the model can do is limited on purpose:

- **No URL injection.** Only the path's ``{placeholders}`` take arguments, each substituted
  percent-encoded as one path segment (``/`` ``?`` ``#`` ``@`` ``%`` included); ``.``, ``..`` and
  empty values are refused. Scheme, host and port come only from the template, and every final
  URL is checked against it. Redirects are not followed (a 3xx is reported as an error).
- **Headers from an allowlist.** Besides the tool's own ``headers``, only the incoming request's
  headers named in ``pass_headers`` are sent on (from :func:`current_run_context`); cookies only
  if named, hop-by-hop headers, ``Host``, ``Content-Length`` and ``Content-Type`` never.
- **No shared cookies.** The tool's session keeps no cookie jar, so a ``Set-Cookie`` received for
  one user's call is never sent with another user's.

Failures are exceptions the executor turns into tool results (status ``error``): a non-2xx answer
raises :class:`RestHTTPError` (``HTTP 404 Not Found: <body excerpt>``), a network failure
:class:`RestConnectionError`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
from multidict import CIMultiDict
from yarl import URL

from ..context import current_run_context
from ..errors import (
    ConfigurationError,
    RestConnectionError,
    RestHTTPError,
    RestToolError,
)
from .base import JSON_TYPES, Tool, ToolArgumentsError

__all__ = ["RestConnectionError", "RestHTTPError", "RestTool", "RestToolError"]

_METHODS = frozenset({"GET", "DELETE", "POST", "PUT", "PATCH"})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
# Never sent on: hop-by-hop headers (RFC 9110 7.6.1) and those describing this request's own
# framing, host or body, which aiohttp sets from the URL and the JSON body.
_NEVER_SENT = frozenset(
    {
        "connection",
        "content-length",
        "content-type",
        "expect",
        "host",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
_PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
# The client's own timeout fires a little after the tool's, so that inside a run the executor's
# timeout wins and the call is reported as ``timeout``; the client's only bounds direct calls.
_CLIENT_GRACE_SECONDS = 0.5


class RestTool(Tool):
    """A tool that calls one HTTP endpoint with the model's arguments.

    ``url`` is a template such as ``https://api.example.com/users/{user_id}/orders``: each
    placeholder names an argument put in the path as one encoded segment. The other arguments go
    to the query string for GET and DELETE, to a JSON object body for POST, PUT and PATCH; names
    in ``query`` go to the query string whatever the method. ``parameters`` is the JSON schema
    (an object) of the arguments; its top level is checked before any request (see
    :func:`_check_arguments`), and arguments it does not declare are refused unless it says
    ``additionalProperties: true``.

    ``headers`` are sent with every call; of the caller's headers only those named in
    ``pass_headers`` (case-insensitive) are passed on, and a name in ``headers`` wins. ``timeout``
    (seconds) bounds each call, as the tool's executor timeout too. A 2xx answer is the result
    (parsed if JSON, else text; at most ``max_response_bytes``); any other status raises
    :class:`RestHTTPError`. The tool owns one ``aiohttp`` session, created on first use and closed
    by :meth:`aclose`; pass ``session`` to use yours instead (it is then never closed here, and
    its cookie jar is yours to mind). ``requires_approval`` pauses the run for a person's approval
    before each call, as for any :class:`Tool`.
    """

    def __init__(
        self,
        name: str,
        description: str,
        method: str,
        url: str,
        parameters: Mapping[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        pass_headers: Iterable[str] = ("authorization", "x-tenant-id"),
        query: Iterable[str] = (),
        timeout: float = 10.0,
        max_body_chars: int = 2000,
        max_response_bytes: int = 1_000_000,
        session: aiohttp.ClientSession | None = None,
        requires_approval: bool = False,
    ) -> None:
        super().__init__(
            name=name,
            description=description,
            parameters=_tool_schema(name, parameters),
            timeout=timeout,
            requires_approval=requires_approval,
        )
        self.method = method.upper()
        if self.method not in _METHODS:
            raise ConfigurationError(
                f"tool {name!r}: method {method!r} is not one of {sorted(_METHODS)}"
            )
        self.url = url
        self._base, self._path, self._static_query = _parse_template(name, url)
        self._placeholders = tuple(_PLACEHOLDER_RE.findall(self._path))
        self._query_names = frozenset(query)
        self._check_names(self._placeholders, "the URL's placeholder")
        self._check_names(self._query_names, "a `query` name")
        self._headers = _static_headers(name, headers or {})
        self._pass_headers = _allowlist(name, pass_headers) - {h.lower() for h in self._headers}
        self.max_body_chars = max_body_chars
        self.max_response_bytes = max_response_bytes
        self._client_timeout = aiohttp.ClientTimeout(total=timeout + _CLIENT_GRACE_SECONDS)
        self._given_session = session
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    def from_openapi(
        cls, spec: Mapping[str, Any], operation_id: str, *, base_url: str, **options: Any
    ) -> RestTool:
        """A tool for the OpenAPI 3 operation ``operation_id`` of ``spec``, sent to ``base_url``.

        The name is the operationId, the description its summary and description; path and
        query parameters and the properties of a JSON object request body become one object
        schema. The host is ``base_url``, never the spec's ``servers``. ``options`` are
        :class:`RestTool`'s keywords (``name`` and ``description`` override the spec's).
        Unsupported (:class:`ConfigurationError`): required header or cookie parameters (optional
        ones are left out), non-JSON or non-object bodies, external ``$ref``, recursive schemas.
        """
        path, method, operation, path_item = _find_operation(spec, operation_id)
        parameters, query = _openapi_parameters(spec, operation_id, path_item, operation)
        _merge_body(spec, operation_id, operation, parameters)
        return cls(
            options.pop("name", operation_id),
            options.pop("description", _openapi_description(operation)),
            method,
            base_url.rstrip("/") + path,
            parameters,
            query=query,
            **options,
        )

    def parse_arguments(self, raw: str) -> dict[str, Any]:
        """Decode the arguments, check them with :func:`_check_arguments` (which, unlike the base
        class, knows OpenAPI's ``nullable`` and ``enum`` and takes ``null`` for "not given"),
        and check that each path parameter makes one path segment."""
        try:
            decoded = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            raise ToolArgumentsError(f"arguments are not valid JSON: {exc}") from None
        if not isinstance(decoded, dict):
            raise ToolArgumentsError("arguments must be a JSON object")
        arguments = _check_arguments(self.parameters, decoded)
        for name in self._placeholders:
            _segment(name, arguments.get(name))
        return arguments

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        """Send the request and return the 2xx answer; raise :class:`RestToolError` otherwise."""
        url, body = self._place(arguments)
        return await self._send(url, self._outgoing_headers(), body)

    async def aclose(self) -> None:
        """Close the session this tool created (a later call opens a new one)."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def __aenter__(self) -> RestTool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _check_names(self, names: Iterable[str], what: str) -> None:
        declared = self.parameters.get("properties", {})
        for name in names:
            if name not in declared:
                raise ConfigurationError(
                    f"tool {self.name!r}: {what} {name!r} is not a property of its parameters"
                )

    def _place(self, arguments: Mapping[str, Any]) -> tuple[URL, dict[str, Any] | None]:
        """The request URL and JSON body (``None`` for GET and DELETE) for these arguments."""
        rest = {k: v for k, v in arguments.items() if k not in self._placeholders}
        to_body = self.method in _BODY_METHODS
        query = [(k, v) for k, v in rest.items() if k in self._query_names or not to_body]
        body = {k: v for k, v in rest.items() if k not in self._query_names} if to_body else None
        path = _PLACEHOLDER_RE.sub(lambda m: _segment(m[1], arguments.get(m[1])), self._path)
        query_string = "&".join(filter(None, [self._static_query, _encode_query(query)]))
        url = URL(f"{self._base}{path}{'?' if query_string else ''}{query_string}", encoded=True)
        # Belt and braces: whatever the arguments, the request goes to the template's origin.
        origin = (url.scheme, url.host, url.port)
        if origin != (self._base.scheme, self._base.host, self._base.port):
            raise RestToolError(f"refused: the arguments would change the URL's origin ({url})")
        return url, body

    def _outgoing_headers(self) -> CIMultiDict[str]:
        """The tool's headers, plus the current caller's allowlisted ones (none outside a run)."""
        headers = CIMultiDict(self._headers)
        ctx = current_run_context()
        if ctx is not None:
            for name, value in ctx.request_headers.items():
                if name.lower() in self._pass_headers:
                    headers.add(name, value)
        return headers

    async def _send(self, url: URL, headers: CIMultiDict[str], body: dict[str, Any] | None) -> Any:
        where = f"{self.method} {url.with_query(None)}"
        try:
            async with self._client().request(
                self.method,
                url,
                headers=headers,
                json=body,
                timeout=self._client_timeout,
                allow_redirects=False,
            ) as response:
                return await self._read(response)
        except (asyncio.TimeoutError, TimeoutError) as exc:
            raise RestConnectionError(f"{where}: no answer within {self.timeout} s") from exc
        except aiohttp.ClientError as exc:
            raise RestConnectionError(f"{where} failed: {type(exc).__name__}: {exc}") from exc

    def _client(self) -> aiohttp.ClientSession:
        if self._given_session is not None:
            return self._given_session
        if self._session is None or self._session.closed:
            # DummyCookieJar: one session serves every user; it must not carry cookies between them.
            self._session = aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar())
        return self._session

    async def _read(self, response: aiohttp.ClientResponse) -> Any:
        """The body of a 2xx answer (JSON parsed, bounded); raise :class:`RestHTTPError` if not."""
        status, reason = response.status, response.reason or ""
        if not 200 <= status < 300:
            data, cut = await _read_at_most(response, self.max_body_chars * 4)
            text = _decode(data, response)
            if cut or len(text) > self.max_body_chars:
                text = text[: self.max_body_chars] + "…"
            raise RestHTTPError(status, reason, text)
        data, cut = await _read_at_most(response, self.max_response_bytes)
        text = _decode(data, response)
        if cut:
            return (
                f"{text}\n[truncated: the response is larger than {self.max_response_bytes} bytes]"
            )
        if not data:
            return f"HTTP {status} {reason} (no body)"
        if response.content_type == "application/json" or response.content_type.endswith("+json"):
            try:
                return json.loads(text)
            except ValueError:
                return text
        return text


def _tool_schema(name: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``parameters`` with ``additionalProperties: false`` unless it says otherwise: arguments
    the schema does not name would otherwise reach the endpoint unchecked."""
    if parameters.get("type", "object") != "object" or not isinstance(
        parameters.get("properties", {}), Mapping
    ):
        raise ConfigurationError(f"tool {name!r}: parameters must be an object schema")
    return {"type": "object", "properties": {}, "additionalProperties": False, **parameters}


def _parse_template(name: str, url: str) -> tuple[URL, str, str]:
    """The template's origin, path (placeholders kept) and static query; placeholders are
    allowed in the path only, so no argument can reach the scheme, host or port."""
    scheme, sep, rest = url.partition("://")
    authority, _, path_and_query = rest.partition("/")
    path, _, static_query = f"/{path_and_query}".partition("?")
    if not sep or scheme.lower() not in ("http", "https") or not authority:
        raise ConfigurationError(f"tool {name!r}: url must be an absolute http(s) URL: {url!r}")
    if any(c in authority + static_query for c in "{}#") or "#" in path:
        raise ConfigurationError(
            f"tool {name!r}: placeholders are allowed in the URL's path only, no fragment: {url!r}"
        )
    base = URL(f"{scheme}://{authority}")
    if not base.host:
        raise ConfigurationError(f"tool {name!r}: url has no host: {url!r}")
    # re.split alternates static text and placeholder names. Static text is encoded as a path
    # would be, keeping "%" so that text already encoded stays as it is.
    pieces = _PLACEHOLDER_RE.split(path)
    for static in pieces[::2]:
        if "{" in static or "}" in static:
            raise ConfigurationError(f"tool {name!r}: malformed placeholder in {url!r}")
    pieces[::2] = [quote(static, safe="/%:@!$&'()*+,;=~") for static in pieces[::2]]
    pieces[1::2] = [f"{{{placeholder}}}" for placeholder in pieces[1::2]]
    return base, "".join(pieces), static_query


def _static_headers(name: str, headers: Mapping[str, str]) -> dict[str, str]:
    for header in headers:
        if header.lower() in _NEVER_SENT:
            raise ConfigurationError(f"tool {name!r}: the header {header!r} cannot be set")
    return dict(headers)


def _allowlist(name: str, pass_headers: Iterable[str]) -> frozenset[str]:
    if isinstance(pass_headers, str):
        raise ConfigurationError(f"tool {name!r}: pass_headers must be a list of names")
    names = frozenset(header.lower() for header in pass_headers)
    if forbidden := sorted(names & _NEVER_SENT):
        raise ConfigurationError(f"tool {name!r}: these headers are never passed on: {forbidden}")
    return names


def _check_arguments(schema: Mapping[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """Check the top level of ``arguments`` against an object schema, without a JSON Schema
    library: required names, undeclared names (unless ``additionalProperties`` allows them),
    each property's ``type`` and ``enum``. Nested values are the endpoint's to check. ``null``
    for an optional property that does not allow it means "not given" and is dropped."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    problems: list[str] = []
    checked: dict[str, Any] = {}
    for key, value in arguments.items():
        prop = properties.get(key)
        if prop is None and not schema.get("additionalProperties", False):
            problems.append(f"{key}: Extra inputs are not permitted")
        elif value is None and not _allows_null(prop or {}):
            continue
        elif problem := _check_value(prop or {}, value):
            problems.append(f"{key}: {problem}")
        else:
            checked[key] = value
    for key in schema.get("required", ()):
        if key not in checked and not any(p.startswith(f"{key}:") for p in problems):
            problems.append(f"{key}: Field required")
    if problems:
        raise ToolArgumentsError("invalid arguments: " + "; ".join(problems))
    return checked


def _allows_null(prop: Mapping[str, Any]) -> bool:
    types = prop.get("type")
    return (
        bool(prop.get("nullable"))
        or types == "null"
        or (isinstance(types, list) and "null" in types)
    )


def _check_value(prop: Mapping[str, Any], value: Any) -> str | None:
    types = prop.get("type")
    names = [types] if isinstance(types, str) else list(types or [])
    if names and not any(_is_type(value, t) for t in names):
        return f"expected {' or '.join(names)}, got {type(value).__name__}"
    if "enum" in prop and not any(value == e and type(value) is type(e) for e in prop["enum"]):
        return f"expected one of {prop['enum']}"
    return None


def _is_type(value: Any, json_type: str) -> bool:
    if value is None and json_type == "null":
        return True
    if isinstance(value, bool):
        return json_type == "boolean"
    if json_type == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, JSON_TYPES.get(json_type, object))


def _segment(name: str, value: Any) -> str:
    """``value`` as one percent-encoded path segment: ``/`` ``?`` ``#`` ``@`` ``%`` are encoded;
    ``.``, ``..`` and empty values would move the path and are refused."""
    if value is None:
        raise ToolArgumentsError(f"invalid arguments: {name}: Field required")
    if isinstance(value, (dict, list)):
        raise ToolArgumentsError(f"invalid arguments: {name}: must be a string or a number")
    text = _scalar(value)
    if text in ("", ".", ".."):
        raise ToolArgumentsError(f"invalid arguments: {name}: {text!r} is not a path segment")
    return quote(text, safe="")


def _encode_query(items: Sequence[tuple[str, Any]]) -> str:
    """Query pairs; a list repeats its name (``tag=a&tag=b``), ``null`` values are left out."""
    pairs = [
        (key, _scalar(item))
        for key, value in items
        for item in (value if isinstance(value, list) else [value])
        if item is not None
    ]
    return urlencode(pairs, quote_via=quote)


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def _read_at_most(response: aiohttp.ClientResponse, limit: int) -> tuple[bytes, bool]:
    """Up to ``limit`` bytes of the body, and whether there was more (the rest is not read)."""
    data = bytearray()
    while len(data) <= limit:
        chunk = await response.content.read(limit + 1 - len(data))
        if not chunk:
            break
        data += chunk
    return bytes(data[:limit]), len(data) > limit


def _decode(data: bytes, response: aiohttp.ClientResponse) -> str:
    try:
        return data.decode(response.charset or "utf-8", errors="replace")
    except LookupError:  # an unknown charset
        return data.decode("utf-8", errors="replace")


# ---- OpenAPI ---------------------------------------------------------------------------------


def _find_operation(
    spec: Mapping[str, Any], operation_id: str
) -> tuple[str, str, Mapping[str, Any], Mapping[str, Any]]:
    """The path, method, operation and path item of ``operation_id``."""
    found = []
    for path, item in (spec.get("paths") or {}).items():
        for method, operation in item.items():
            if method.upper() in _METHODS and isinstance(operation, Mapping):
                if operation.get("operationId") == operation_id:
                    return path, method.upper(), operation, item
                found.append(str(operation.get("operationId")))
    raise ConfigurationError(
        f"no operation {operation_id!r} in the OpenAPI spec (it has: {', '.join(found) or 'none'})"
    )


def _openapi_parameters(
    spec: Mapping[str, Any],
    operation_id: str,
    path_item: Mapping[str, Any],
    operation: Mapping[str, Any],
) -> tuple[dict[str, Any], list[str]]:
    """The object schema of the path and query parameters, and the query parameters' names."""
    merged: dict[tuple[str, str], Mapping[str, Any]] = {}
    for raw in [*path_item.get("parameters", ()), *operation.get("parameters", ())]:
        param = _resolve(spec, raw)
        merged[(param["name"], param["in"])] = param  # the operation's override the path's
    properties: dict[str, Any] = {}
    required: list[str] = []
    query: list[str] = []
    for (name, where), param in merged.items():
        if where in ("header", "cookie") and not param.get("required"):
            continue
        if where not in ("path", "query") or "schema" not in param:
            raise ConfigurationError(
                f"{operation_id}: parameter {name!r} ({where}) is not supported: only path and "
                "query parameters with a schema"
            )
        schema = dict(param["schema"])
        if "description" in param:
            schema.setdefault("description", param["description"])
        properties[name] = schema
        if where == "path" or param.get("required"):
            required.append(name)
        if where == "query":
            query.append(name)
    schema = {"type": "object", "properties": properties, "required": required}
    return {**schema, "additionalProperties": False}, query


def _merge_body(
    spec: Mapping[str, Any],
    operation_id: str,
    operation: Mapping[str, Any],
    parameters: dict[str, Any],
) -> None:
    """Add the properties of the JSON object request body (if any) to ``parameters``."""
    if "requestBody" not in operation:
        return
    body = _resolve(spec, operation["requestBody"])
    content = body.get("content", {})
    media = next((m for m in content if m == "application/json" or m.endswith("+json")), None)
    schema = content[media].get("schema", {}) if media is not None else None
    if schema is None or schema.get("type", "object") != "object" or "properties" not in schema:
        raise ConfigurationError(
            f"{operation_id}: only a JSON object request body with properties is supported"
        )
    for name, prop in schema["properties"].items():
        if name in parameters["properties"]:
            raise ConfigurationError(
                f"{operation_id}: {name!r} is both a parameter and in the body"
            )
        parameters["properties"][name] = prop
    if body.get("required"):
        parameters["required"] += list(schema.get("required", ()))


def _openapi_description(operation: Mapping[str, Any]) -> str:
    parts = [operation.get("summary"), operation.get("description")]
    return "\n\n".join(dict.fromkeys(str(p).strip() for p in parts if p))


def _resolve(spec: Mapping[str, Any], node: Any, seen: tuple[str, ...] = ()) -> Any:
    """``node`` with every local ``$ref`` (``#/components/...``) replaced by what it points to."""
    if isinstance(node, list):
        return [_resolve(spec, item, seen) for item in node]
    if not isinstance(node, Mapping):
        return node
    ref = node.get("$ref")
    if ref is None:
        return {key: _resolve(spec, value, seen) for key, value in node.items()}
    if not isinstance(ref, str) or not ref.startswith("#/"):
        raise ConfigurationError(f"OpenAPI: only local $ref are supported, not {ref!r}")
    if ref in seen:
        raise ConfigurationError(f"OpenAPI: recursive $ref {ref!r} is not supported")
    target: Any = spec
    for part in ref[2:].split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, Mapping) or key not in target:
            raise ConfigurationError(f"OpenAPI: $ref {ref!r} points to nothing")
        target = target[key]
    return _resolve(spec, target, (*seen, ref))
