"""``LiteLLMModel``: any provider litellm supports, streamed chunk by chunk.

This is the only module that imports litellm, and it does so on first use: litellm takes
seconds and over 100 MiB to import. Before the import we set (unless the environment already
does) ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (else it fetches a price list over the network),
``LITELLM_MODE=PRODUCTION`` (else it loads ``./.env``) and ``LITELLM_LOG=ERROR``.

litellm's own retries are switched off (``num_retries=0, max_retries=0``): the executor retries,
and only before the first chunk. Provider errors are classified by ``status_code``, not by
exception class, because litellm picks the class partly from the message text.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

from ..errors import ConfigurationError, ModelError, UnsupportedRequestError, retryable_status
from ..messages import Usage, to_openai_messages
from .base import ModelChunk, ModelRequest, ToolCallDelta

__all__ = ["LiteLLMModel", "import_litellm", "model_window"]

_litellm: ModuleType | None = None
_IMPORT_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_MODE": "PRODUCTION",
    "LITELLM_LOG": "ERROR",
}


def import_litellm() -> ModuleType:
    """The litellm module, imported once, on first use, with the environment above."""
    global _litellm
    if _litellm is None:
        for name, value in _IMPORT_ENV.items():
            os.environ.setdefault(name, value)
        import litellm

        litellm.suppress_debug_info = True
        litellm.disable_hf_tokenizer_download = True
        _litellm = litellm
    return _litellm


def model_window(name: str) -> int:
    """The context window (input tokens) litellm's model data gives ``name``;
    :class:`ConfigurationError` when it has none (a local model: set the window yourself)."""
    litellm = import_litellm()
    try:
        window = litellm.get_model_info(name).get("max_input_tokens")
    except Exception:  # litellm raises for a model it does not know
        window = None
    if not isinstance(window, int) or window < 256:
        raise ConfigurationError(
            f"litellm's model data has no context window for {name!r}: give "
            "ModelPolicy(context_window=<tokens>)"
        )
    return window


class LiteLLMModel:
    """A model reached through litellm, e.g. ``LiteLLMModel("openai/gpt-4o-mini")``.

    ``api_base`` and ``api_key`` point it at any OpenAI-compatible server; other keyword
    arguments (``temperature``, ``timeout``, ...) are passed to ``litellm.acompletion``.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        **params: Any,
    ) -> None:
        self._model = model
        self._params: dict[str, Any] = dict(params)
        if api_base is not None:
            self._params["api_base"] = api_base
        if api_key is not None:
            self._params["api_key"] = api_key

    @property
    def name(self) -> str:
        """The litellm model string."""
        return self._model

    def preload(self) -> None:
        """Import litellm now, so the first request does not wait for it."""
        import_litellm()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Stream one completion, translating litellm's exceptions into :class:`ModelError`."""
        litellm = import_litellm()
        kwargs: dict[str, Any] = {
            **self._params,
            **request.params,
            "model": self._model,
            "messages": to_openai_messages(request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            "num_retries": 0,
            "max_retries": 0,
            # litellm 1.106 imports the optional ``mcp`` package for any call with tools unless
            # told to skip its MCP handler (the flag is not sent to the provider).
            "_skip_mcp_handler": True,
        }
        if request.tools:
            kwargs["tools"] = request.tools
        _check_supported(litellm, self._model, kwargs)
        try:
            response = await litellm.acompletion(**kwargs)
        except Exception as exc:
            raise _translate(exc) from exc
        state = _ProviderState()
        try:
            async for chunk in response:
                converted = _convert(chunk, state)
                if converted is not None:
                    yield converted
        except Exception as exc:
            raise _translate(exc) from exc
        finally:
            await _close(response)
        if state:
            yield ModelChunk(provider_fields=state.fields())
        if state.reported_usage is not None:
            # After litellm's own estimate, which it sends when it found no ``usage``.
            yield ModelChunk(usage=state.reported_usage)


class _ProviderState:
    """What litellm gives of a turn that must go back with it: the reasoning text
    (``reasoning_content``, litellm's one name for every provider's) and Anthropic's thinking
    blocks with their signatures (``thinking_blocks``), from which litellm rebuilds the
    signed blocks Anthropic requires before a ``tool_use`` on the next request."""

    __slots__ = ("blocks", "reasoning", "reported_usage")

    def __init__(self) -> None:
        self.reasoning: list[str] = []
        self.blocks: list[dict[str, Any]] = []
        self.reported_usage: Usage | None = None

    def __bool__(self) -> bool:
        return bool(self.reasoning or self.blocks)

    def add_blocks(self, blocks: Any) -> None:
        """Fold streamed block fragments: thinking text is appended to the open block until
        its signature arrives; redacted blocks come whole."""
        for raw in blocks:
            block = dict(raw) if isinstance(raw, dict) else dict(getattr(raw, "__dict__", {}))
            last = self.blocks[-1] if self.blocks else None
            if (
                block.get("type") == "thinking"
                and last is not None
                and last.get("type") == "thinking"
                and not last.get("signature")
            ):
                last["thinking"] = (last.get("thinking") or "") + (block.get("thinking") or "")
                if block.get("signature"):
                    last["signature"] = block["signature"]
                continue
            self.blocks.append(block)

    def fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if self.reasoning:
            fields["reasoning_content"] = "".join(self.reasoning)
        if self.blocks:
            fields["thinking_blocks"] = self.blocks
        return fields


def _convert(chunk: Any, state: _ProviderState) -> ModelChunk | None:
    choices = getattr(chunk, "choices", None) or ()
    usage = _usage(getattr(chunk, "usage", None))
    if not choices:
        return ModelChunk(usage=usage) if usage else None
    choice = choices[0]
    delta = getattr(choice, "delta", None)
    text = getattr(delta, "content", None) if delta is not None else None
    raw_calls = getattr(delta, "tool_calls", None) if delta is not None else None
    calls = tuple(_delta(call) for call in raw_calls) if raw_calls else None
    finish = getattr(choice, "finish_reason", None)
    if finish == "error":
        raise ModelError("the model reported an error mid-stream", retryable=True)
    if finish and usage is None:
        state.reported_usage = _groq_usage(chunk) or state.reported_usage
    reasoning = getattr(delta, "reasoning_content", None) if delta is not None else None
    if reasoning is not None and not isinstance(reasoning, str):
        reasoning = None
    if reasoning:
        state.reasoning.append(reasoning)
    blocks = getattr(delta, "thinking_blocks", None) if delta is not None else None
    if blocks:
        state.add_blocks(blocks)
    if not (text or calls or finish or usage or reasoning):
        return None
    return ModelChunk(
        text=text or None,
        tool_calls=calls,
        finish_reason=finish,
        usage=usage,
        reasoning=reasoning or None,
    )


def _delta(call: Any) -> ToolCallDelta:
    function = getattr(call, "function", None)
    arguments = getattr(function, "arguments", None)
    if arguments is not None and not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    extra = getattr(call, "model_extra", None)
    fields = {k: v for k, v in extra.items() if v is not None} if extra else None
    return ToolCallDelta(
        index=getattr(call, "index", None),
        id=getattr(call, "id", None) or None,
        name=getattr(function, "name", None) or None,
        arguments=arguments or None,
        provider_fields=fields or None,
    )


def _usage(usage: Any) -> Usage | None:
    if usage is None:
        return None
    prompt = getattr(usage, "prompt_tokens", None) or 0
    completion = getattr(usage, "completion_tokens", None) or 0
    if not (prompt or completion):
        return None
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    return Usage(input_tokens=prompt, output_tokens=completion, cached_input_tokens=cached or 0)


def _groq_usage(chunk: Any) -> Usage | None:
    """Groq reports a stream's usage in ``x_groq.usage`` on its last chunk, which litellm
    keeps as an extra field (with an ``openai/`` model) but does not read."""
    extra = getattr(chunk, "model_extra", None) or {}
    groq = extra.get("x_groq")
    raw = groq.get("usage") if isinstance(groq, dict) else None
    if not isinstance(raw, dict):
        return None
    return Usage(
        input_tokens=raw.get("prompt_tokens") or 0, output_tokens=raw.get("completion_tokens") or 0
    )


_ASKED = ("response_format", "tool_choice", "parallel_tool_calls")
"""Request fields that change the answer, which a provider that cannot take them refuses."""


def _check_supported(litellm: ModuleType, model: str, kwargs: dict[str, Any]) -> None:
    """Refuse what the provider cannot do (by litellm's own list of each provider's
    parameters) before calling it: a ``response_format`` or a forced ``tool_choice`` it would
    ignore, or that litellm would refuse in words of its own. ``parallel_tool_calls`` and an
    ``auto`` tool choice are hints, dropped when the provider has no such parameter."""
    asked = [name for name in _ASKED if name in kwargs]
    if not asked:
        return
    try:
        supported = litellm.get_supported_openai_params(model=model)
    except Exception:
        supported = None
    if not isinstance(supported, list):
        return  # a provider litellm has no list for: let the provider answer
    for name in asked:
        if name in supported:
            continue
        if name == "parallel_tool_calls" or kwargs[name] == "auto":
            del kwargs[name]
            continue
        raise UnsupportedRequestError(
            f"the model {model} cannot take {name} (its provider has no such parameter)",
            feature=name,
        )


def _translate(exc: Exception) -> ModelError:
    """litellm's exception → :class:`ModelError` (the one place provider errors are mapped)."""
    if isinstance(exc, ModelError):
        return exc
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    retryable = status is not None and retryable_status(status)
    name = type(exc).__name__
    if status is None and any(key in name for key in ("Connection", "Timeout", "Unavailable")):
        retryable = True
    message = getattr(exc, "message", None) or str(exc) or name
    refused = next((field for field in _ASKED if field in message), None)
    if status in (400, 422) and refused is not None:
        return UnsupportedRequestError(
            f"the model's provider refused {refused} (HTTP {status})", feature=refused
        )
    return ModelError(
        f"{name}: {message}", retryable=retryable, status_code=status, retry_after=_retry_after(exc)
    )


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


async def _close(response: Any) -> None:
    for target in (response, getattr(response, "completion_stream", None)):
        aclose = getattr(target, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()
            return
