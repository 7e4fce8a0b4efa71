"""Errors in our words (issue 30, item 6): ``/v1`` answers carry our code, not ``null``; a body
over the limit is refused with the limit; ``--max-body-bytes`` and ``--max-message-chars`` set
the two limits of the running service."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from server import Settings

from .helpers import make_executor
from .server_helpers import serve, service_process

_OVER = {"message": "x" * 2000}


@pytest.mark.parametrize("path", ["/api/chat", "/api/chat/stream", "/v1/chat/completions"])
async def test_a_body_over_the_limit_is_refused_with_the_limit(path: str) -> None:
    async with serve(make_executor([]), Settings(max_body_bytes=1000)) as client:
        answer = await client.post(path, json=_OVER)

    assert answer.status_code == 413
    error = answer.json()["error"]
    assert error["message"] == "the body is over the limit of 1000 bytes"
    assert error["code"] == "payload_too_large"


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        ("/v1/chat/completions", b"{", 400, "invalid_input"),
        ("/v1/chat/completions", b"[1]", 400, "invalid_input"),
        ("/v1/chat/completions", b'{"model": "default"}', 400, "invalid_input"),
        ("/v1/responses", b"{", 400, "invalid_input"),
        ("/v1/nowhere", b"{}", 404, "not_found"),
    ],
    ids=["not JSON", "not an object", "no messages", "responses", "no such path"],
)
async def test_v1_errors_carry_our_code(path: str, body: bytes, status: int, code: str) -> None:
    async with serve(make_executor([])) as client:
        answer = await client.post(path, content=body, headers={"Content-Type": "application/json"})

    assert answer.status_code == status
    error: dict[str, Any] = answer.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["code"] == code
    assert error["type"] == "invalid_request_error"


def test_the_flags_set_the_body_and_message_limits_of_the_service() -> None:
    with service_process("--max-body-bytes", "2000", "--max-message-chars", "50") as (_, base):
        large = httpx.post(f"{base}/api/chat", json={"message": "x" * 3000}, timeout=10)
        long = httpx.post(f"{base}/api/chat", json={"message": "y" * 60}, timeout=10)
        short = httpx.post(f"{base}/api/chat", json={"message": "hello"}, timeout=10)

    assert large.status_code == 413
    assert large.json()["error"]["message"] == "the body is over the limit of 2000 bytes"
    assert long.status_code == 400
    assert long.json()["error"]["code"] == "invalid_input"
    assert long.json()["error"]["message"] == "the input is too long (limit 50 characters)"
    assert short.status_code == 200
