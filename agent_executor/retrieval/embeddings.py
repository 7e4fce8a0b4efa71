"""Embeddings for vector search: the :class:`Embeddings` protocol and a client of the
OpenAI-compatible ``POST /v1/embeddings`` endpoint (:class:`OpenAIEmbeddings`).

The endpoint is the one OpenAI defined and most servers copy (vLLM, llama.cpp's server, Ollama,
LiteLLM's proxy, Text Embeddings Inference): ``{"model", "input": [texts]}`` in,
``{"data": [{"index", "embedding"}], "usage"}`` out. The client is aiohttp, which the library
depends on already; vectors come back normalised to length 1, so a dot product is their cosine.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import aiohttp

from ..errors import ConfigurationError, ModelError

__all__ = ["Embeddings", "OpenAIEmbeddings", "normalised"]


@runtime_checkable
class Embeddings(Protocol):
    """Turns texts into vectors of one fixed length, in the order given."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class OpenAIEmbeddings:
    """An OpenAI-compatible embeddings endpoint.

    ``api_base`` is the base URL up to and including ``/v1`` (the ``/embeddings`` path is
    added); ``api_key`` defaults to ``OPENAI_API_KEY`` (none is sent without one, as local
    servers expect). Texts go in batches of ``batch_size``; ``dimensions`` is passed on for
    models that can shorten their vectors. Failures raise :class:`ModelError`.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str,
        api_key: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
    ) -> None:
        if batch_size < 1:
            raise ConfigurationError("batch_size must be >= 1")
        self.model = model
        self.url = api_base.rstrip("/") + "/embeddings"
        self.dimensions = dimensions
        self.batch_size = batch_size
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors += await self._batch(list(texts[start : start + self.batch_size]))
        return vectors

    async def _batch(self, texts: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.model, "input": texts}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        try:
            async with self._session.post(self.url, json=body, headers=self._headers) as response:
                if response.status != 200:
                    detail = (await response.text())[:200]
                    raise ModelError(
                        f"embeddings endpoint answered {response.status}: {detail}",
                        retryable=response.status in (429, 500, 502, 503, 504),
                    )
                data = await response.json()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ModelError(f"embeddings endpoint unreachable: {exc!r}", retryable=True) from exc
        try:
            rows = sorted(data["data"], key=lambda row: row["index"])
            vectors = [normalised([float(x) for x in row["embedding"]]) for row in rows]
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"embeddings endpoint sent an unexpected body: {exc!r}") from exc
        if len(vectors) != len(texts):
            raise ModelError(f"embeddings endpoint sent {len(vectors)} vectors for {len(texts)}")
        return vectors

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def normalised(vector: list[float]) -> list[float]:
    """``vector`` scaled to length 1 (a zero vector stays zero)."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return vector if norm == 0 else [x / norm for x in vector]
