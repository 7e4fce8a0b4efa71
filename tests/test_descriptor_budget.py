"""The service's descriptor budget: a service whose open-file limit is small refuses the streams
it has no room for with 503 ``overloaded`` and ``Retry-After`` before they start, serves every
stream it admits to its end, answers no request ``internal_error`` and logs no traceback; the
budget counts its refusals. (One process at 11,000 streams is the same rule at a limit of
20,000; this test keeps it small: a limit of 200 and 100 streams.)"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator

import anyio
import httpx
import pytest

from server.descriptors import PER_STREAM, DescriptorBudget

from .fakes.tool_model import ThreadedModelServer, served_tool_model
from .server_helpers import _wait_healthy, free_port, logged_process, stop

LIMIT = 200
STREAMS = 100

_Outcome = tuple[int, str | None, str]
_PATIENCE = 40
"""Seconds the streams get, under pytest's 60: a stall fails with the service's log."""


def test_the_budget_keeps_a_reserve() -> None:
    assert DescriptorBudget(None).admits(10**9)
    budget = DescriptorBudget(LIMIT)
    assert budget.reserve == 64 and budget.max_streams == (LIMIT - 64) // PER_STREAM
    assert budget.admits(LIMIT - 64 - PER_STREAM) and not budget.admits(LIMIT - 64 - 1)
    assert DescriptorBudget(20_000).max_streams == 9_500


@pytest.fixture(scope="module")
def model() -> Iterator[ThreadedModelServer]:
    with served_tool_model() as served:
        yield served


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


async def _burst(model: ThreadedModelServer, streams: int) -> tuple[list[_Outcome], str, str]:
    """``streams`` slow streams at once against a service limited to ``LIMIT`` descriptors:
    each one's status, ``Connection`` header and body; the service's log; its metrics."""
    port = free_port()
    process = logged_process(
        [
            sys.executable, "-m", "server", "--port", str(port),
            "--model", "openai/test-model", "--api-base", model.base_url, "--api-key", "sk-test",
            "--tools", "tests/interop/slow_tools.py", "--max-concurrency", "400",
        ],
        env=dict(os.environ), preexec_fn=_limited,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    outcomes: list[_Outcome] = []

    async def one(client: httpx.AsyncClient, number: int) -> None:
        body = {"message": f'slow_lookup({{"order_id": "{number}"}})'}
        async with client.stream("POST", f"{base}/api/chat/stream", json=body) as response:
            text = (await response.aread()).decode()
            outcomes.append((response.status_code, response.headers.get("connection"), text))

    metrics = ""
    try:
        _wait_healthy(process, base)
        limits = httpx.Limits(max_connections=streams + 10)
        async with httpx.AsyncClient(timeout=_PATIENCE, limits=limits) as client:
            with anyio.move_on_after(_PATIENCE) as waiting:
                async with anyio.create_task_group() as tg:
                    for number in range(streams):
                        tg.start_soon(one, client, number)
            if not waiting.cancelled_caught:
                metrics = (await client.get(f"{base}/metrics")).text
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            stop(process)
            raise
        assert process.stdout is not None
        log = process.stdout.read()
        stop(process)
    assert len(outcomes) == streams, (
        f"{len(outcomes)} of {streams} streams ended within {_PATIENCE} s; the test process has "
        f"{len(os.listdir('/proc/self/fd'))} descriptors open of "
        f"{resource.getrlimit(resource.RLIMIT_NOFILE)[0]}; the service's log ends:\n"
        f"{log[-3000:]}"
    )
    return outcomes, log, metrics


async def test_a_full_process_refuses_streams_with_503_and_serves_the_rest(
    model: ThreadedModelServer,
) -> None:
    outcomes, log, metrics = await _burst(model, STREAMS)

    served = [text for status, _, text in outcomes if status == 200]
    refused = [(connection, text) for status, connection, text in outcomes if status == 503]
    assert len(served) + len(refused) == STREAMS, [s for s, _, _ in outcomes]
    assert refused, "the budget should have refused some streams"
    assert all('"code": "overloaded"' in text for _, text in refused), refused[:1]
    assert all(connection == "close" for connection, _ in refused)  # its descriptor back
    assert all("event: done" in text and "internal_error" not in text for text in served)
    assert "Traceback" not in log, log[-2000:]
    counted = [line for line in metrics.splitlines() if "sse_streams_refused_total{" in line]
    assert counted and float(counted[0].rsplit(" ", 1)[1]) == len(refused)


async def test_more_connections_than_descriptors_wait_to_be_accepted_without_tracebacks(
    model: ThreadedModelServer,
) -> None:
    """More clients at once than the process has descriptors for: the listener cannot accept
    them all; asyncio accepts again a second later. Each is served or refused as above, and the
    log says so in a warning a second, not a traceback per failed accept (a hundred thousand
    at 11,000 streams)."""
    streams = LIMIT + 20
    outcomes, log, _ = await _burst(model, streams)

    assert len(outcomes) == streams
    assert all(
        (status == 200 and "event: done" in text and "internal_error" not in text)
        or (status == 503 and '"code": "overloaded"' in text)
        for status, _, text in outcomes
    ), [(s, t[:200]) for s, _, t in outcomes if s not in (200, 503)]
    assert "out of descriptors: " in log  # the listener did run out
    assert "Traceback" not in log, log[-2000:]
