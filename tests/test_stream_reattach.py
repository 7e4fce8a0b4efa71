"""Streams that survive the network: a client whose connection drops mid-answer comes back
with ``Last-Event-ID`` and gets the rest of the same run; nothing is started or run again.

Each test cuts a real connection to the service (httpx against the app on 127.0.0.1) at a known
point: the model's tool call waits on a gate the test opens once the client has gone, so the
run goes on without a reader, as it would while a phone changes networks.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from agent_executor import AgentExecutor, RateLimitGuard, tool
from agent_executor.models.scripted import call, text_turn, tool_turn
from server import Settings

from .helpers import make_executor, model_of, sample
from .server_helpers import serve

FAST = Settings(heartbeat_seconds=0.1, reattach_grace_seconds=5.0)


class Refund:
    """A tool with a side effect, held at a gate the test opens."""

    def __init__(self) -> None:
        self.gate = anyio.Event()
        self.runs = 0
        self.cancelled = anyio.Event()

        @tool
        async def refund(amount: int) -> str:
            """Refund an amount."""
            self.runs += 1
            try:
                await self.gate.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled.set()
                raise
            return f"refunded {amount}"

        self.tool = refund


def refunding(refund: Refund) -> AgentExecutor:
    return make_executor(
        [
            tool_turn(call("refund", {"amount": 5}, id="c1"), text="Checking "),
            text_turn("Done with it."),
        ],
        [refund.tool],
    )


def parse(body: str) -> list[dict[str, str]]:
    """The events of an SSE body (``event``, ``data``, ``id``)."""
    events = []
    for block in body.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            name, _, value = line.partition(": ")
            if name in ("event", "id"):
                fields[name] = value
            elif name == "data":
                fields["data"] = f"{fields['data']}\n{value}" if "data" in fields else value
        if "event" in fields:
            events.append(fields)
    return events


def text(events: list[dict[str, str]]) -> str:
    return "".join(e["data"] for e in events if e["event"] == "message")


@asynccontextmanager
async def cut_after(
    client: httpx.AsyncClient, kind: str, **request: Any
) -> AsyncIterator[list[dict[str, str]]]:
    """Stream a chat and drop the connection right after the first ``kind`` event; yields the
    events the client got (filled in before the body of the ``with`` runs)."""
    got: list[dict[str, str]] = []
    buffer = ""
    async with client.stream("POST", "/api/chat/stream", **request) as response:
        assert response.status_code == 200
        async for chunk in response.aiter_text():
            buffer += chunk
            got = parse(buffer[: buffer.rfind("\n\n") + 2])
            if any(e["event"] == kind for e in got):
                break
    yield got


async def test_a_client_that_comes_back_gets_the_rest_of_the_same_run() -> None:
    refund = Refund()
    executor = refunding(refund)

    async with serve(executor, FAST) as client:
        async with cut_after(client, "tool_start", json={"message": "refund 5"}) as first:
            refund.gate.set()
        again = await client.post(
            "/api/chat/stream",
            json={"message": "refund 5"},
            headers={"Last-Event-ID": first[-1]["id"]},
        )

    rest = parse(again.text)
    assert again.status_code == 200
    assert [e["event"] for e in first] == ["message", "tool_start"]
    assert [e["event"] for e in rest] == [
        "tool_end", "message", "message", "message", "message", "done",
    ]  # fmt: skip
    assert text(first) + text(rest) == "Checking \n\nDone with it."
    run, position = first[-1]["id"].split(":")
    assert [e["id"] for e in rest] == [f"{run}:{int(position) + 1 + i}" for i in range(6)]
    assert refund.runs == 1
    assert len(model_of(executor).requests) == 2


async def test_any_text_comes_back_byte_for_byte_from_any_position() -> None:
    """Non-ASCII, astral and long deltas (the log keeps short ASCII text apart from the rest)."""
    refund = Refund()
    before = "Voilà ünï 😀 " + "x" * 300 + " ok "
    after = "Fertig — " + "y" * 70000 + " 終わり\n\nbye"
    executor = make_executor(
        [tool_turn(call("refund", {"amount": 5}, id="c1"), text=before), text_turn(after)],
        [refund.tool],
    )

    async with serve(executor, FAST) as client:
        async with cut_after(client, "tool_start", json={"message": "refund 5"}) as first:
            refund.gate.set()
        again = [
            parse(
                (
                    await client.post(
                        "/api/chat/stream",
                        json={"message": "refund 5"},
                        headers={"Last-Event-ID": first[position]["id"]},
                    )
                ).text
            )
            for position in (0, 2, len(first) - 1)
        ]

    whole = before + "\n\n" + after
    for position, rest in zip((0, 2, len(first) - 1), again, strict=True):
        assert text(first[: position + 1]) + text(rest) == whole
        assert rest[-1]["event"] == "done"
    assert refund.runs == 1


async def test_an_event_source_reconnecting_by_get_gets_the_rest_and_then_204() -> None:
    refund = Refund()
    executor = refunding(refund)

    async with serve(executor, FAST) as client:
        async with cut_after(client, "message", json={"message": "refund 5"}) as first:
            refund.gate.set()
        query = {"message": "refund 5"}
        rest = await client.get(
            "/api/chat/stream", params=query, headers={"Last-Event-ID": first[-1]["id"]}
        )
        done_id = parse(rest.text)[-1]["id"]
        after_done = await client.get(
            "/api/chat/stream", params=query, headers={"Last-Event-ID": done_id}
        )

    assert text(first) + text(parse(rest.text)) == "Checking \n\nDone with it."
    assert after_done.status_code == 204  # EventSource stops: nothing runs again
    assert refund.runs == 1
    assert len(model_of(executor).requests) == 2


@pytest.mark.parametrize("last_event", ["nobody:3", "garbage", ""])
async def test_a_run_the_service_cannot_place_is_a_204_and_starts_nothing(last_event: str) -> None:
    executor = make_executor(["never"])

    async with serve(executor, FAST) as client:
        response = await client.post(
            "/api/chat/stream", json={"message": "hi"}, headers={"Last-Event-ID": last_event}
        )
        explicit = await client.get("/api/runs/nobody/events")

    assert response.status_code == 204
    assert model_of(executor).requests == []
    assert explicit.status_code == 404
    assert explicit.json()["error"]["code"] == "not_found"


async def test_someone_elses_run_is_not_theirs_to_read_or_stop() -> None:
    refund = Refund()
    executor = refunding(refund)

    async with serve(executor, FAST) as client:
        alice = {"X-User-Id": "alice"}
        async with cut_after(
            client, "tool_start", json={"message": "refund 5"}, headers=alice
        ) as first:
            run = first[-1]["id"].split(":")[0]
            mallory = {"X-User-Id": "mallory", "Last-Event-ID": first[-1]["id"]}
            stolen = await client.post("/api/chat/stream", json={"message": "x"}, headers=mallory)
            read = await client.get(f"/api/runs/{run}/events", headers={"X-User-Id": "mallory"})
            stop = await client.delete(f"/api/runs/{run}", headers={"X-User-Id": "mallory"})
            refund.gate.set()
        mine = await client.get(f"/api/runs/{run}/events", headers=alice)

    assert (stolen.status_code, read.status_code, stop.status_code) == (204, 404, 404)
    assert text(parse(mine.text)) == "Checking \n\nDone with it."  # from the start
    assert refund.runs == 1


async def test_a_run_nobody_comes_back_to_is_cancelled_after_the_grace() -> None:
    refund = Refund()
    executor = refunding(refund)
    registry = executor.metrics.registry
    settings = Settings(heartbeat_seconds=0.1, reattach_grace_seconds=0.3)

    async with serve(executor, settings) as client:
        async with cut_after(client, "tool_start", json={"message": "refund 5"}):
            pass
        with anyio.fail_after(5):
            await refund.cancelled.wait()

    assert sample(registry, "agent_executor_requests_total", mode="stream", outcome="cancelled")
    assert sample(registry, "agent_executor_in_flight_requests") == 0


async def test_an_explicit_stop_cancels_at_once() -> None:
    refund = Refund()
    executor = refunding(refund)

    async with serve(executor, FAST) as client:
        async with cut_after(client, "tool_start", json={"message": "refund 5"}) as first:
            run = first[-1]["id"].split(":")[0]
            stop = await client.delete(f"/api/runs/{run}")
            with anyio.fail_after(2):  # well before the 5 s grace
                await refund.cancelled.wait()
        again = await client.post(
            "/api/chat/stream", json={"message": "x"}, headers={"Last-Event-ID": first[-1]["id"]}
        )

    assert stop.status_code == 200
    assert stop.json() == {"run_id": run, "stopped": True}
    assert again.status_code == 204


async def test_a_stop_ends_every_reader_with_cancelled_and_done() -> None:
    """The client that started the run and one re-attached beside it are both told why
    their stream ends: an ``error`` (``cancelled``) and ``done``, not a silent end."""
    refund = Refund()
    executor = refunding(refund)
    run_ids: list[str] = []
    ended: dict[str, list[dict[str, str]]] = {}

    async def read(name: str, method: str, url: str, **request: Any) -> None:
        async with client.stream(method, url, **request) as response:
            run_ids.append(response.headers["x-run-id"])
            ended[name] = parse((await response.aread()).decode())

    with anyio.fail_after(10):
        async with serve(executor, FAST) as client, anyio.create_task_group() as readers:
            first = {"message": "refund 5", "events": "json"}
            readers.start_soon(lambda: read("first", "POST", "/api/chat/stream", json=first))
            while not refund.runs:
                await anyio.sleep(0.01)
            run = run_ids[0]
            readers.start_soon(lambda: read("again", "GET", f"/api/runs/{run}/events"))
            while len(run_ids) < 2:
                await anyio.sleep(0.01)
            stop = await client.delete(f"/api/runs/{run}")

    assert stop.json() == {"run_id": run, "stopped": True}
    assert sorted(ended) == ["again", "first"]
    for events in ended.values():
        assert [e["event"] for e in events] == ["message", "tool_start", "error", "done"]
        assert json.loads(events[2]["data"])["code"] == "cancelled"
        assert json.loads(events[3]["data"])["finish_reason"] == "error"
    assert refund.cancelled.is_set()


class _SlowRelay:
    """A relay whose question "does a client read this run on another replica?" waits for
    the test: the moment between a grace running out and the run being cancelled."""

    def __init__(self) -> None:
        self.asked = anyio.Event()
        self.answer = anyio.Event()

    def mirror(self, run: object, dialect: str, stop: object) -> None:
        pass

    async def has_reader(self, run_id: str) -> bool:
        self.asked.set()
        await self.answer.wait()
        return False

    async def find(self, run_id: str) -> None:
        return None

    async def run_of_session(self, user_id: str | None, session_id: str) -> None:
        return None

    async def stop(self, run_id: str) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def test_a_client_back_as_the_grace_runs_out_keeps_the_run() -> None:
    refund = Refund()
    executor = refunding(refund)
    relay = _SlowRelay()
    settings = Settings(heartbeat_seconds=0.1, reattach_grace_seconds=0.2)

    async with serve(executor, settings, relay=relay) as client:
        async with cut_after(client, "tool_start", json={"message": "refund 5"}) as first:
            pass
        with anyio.fail_after(5):
            await relay.asked.wait()  # the grace is over; the run is about to be cancelled
        headers = {"Last-Event-ID": first[-1]["id"]}
        async with client.stream("POST", "/api/chat/stream", headers=headers) as again:
            relay.answer.set()  # nobody reads it elsewhere: but this client is back
            await anyio.sleep(0.1)
            refund.gate.set()
            rest = parse((await again.aread()).decode())

    assert again.status_code == 200
    assert text(first) + text(rest) == "Checking \n\nDone with it."
    assert rest[-1]["event"] == "done"
    assert not refund.cancelled.is_set()
    assert refund.runs == 1


async def test_a_finished_run_is_kept_for_the_window_then_forgotten() -> None:
    executor = make_executor(["Hello there."])
    settings = Settings(heartbeat_seconds=0.1, replay_window_seconds=0.3)

    async with serve(executor, settings) as client:
        first = await client.post("/api/chat/stream", json={"message": "hi"})
        run = first.headers["x-run-id"]
        replayed = await client.get(f"/api/runs/{run}/events")
        with anyio.fail_after(5):
            while (await client.get(f"/api/runs/{run}/events")).status_code != 404:
                await anyio.sleep(0.05)

    assert replayed.content == first.content  # the same bytes, from the start


async def test_a_refusal_on_get_is_a_stream_event_source_can_read() -> None:
    executor = make_executor(["one", "two"], guards=[RateLimitGuard("1/hour")])

    async with serve(executor, FAST) as client:
        await client.get("/api/chat/stream", params={"message": "hi"})
        refused = await client.get("/api/chat/stream", params={"message": "hi", "events": "json"})
        posted = await client.post("/api/chat/stream", json={"message": "hi"})

    assert refused.status_code == 200
    assert refused.headers["content-type"] == "text/event-stream"
    error, done = parse(refused.text)
    assert error["event"] == "error"
    assert json.loads(error["data"])["code"] == "rate_limited"
    assert json.loads(error["data"])["retry_after"] > 0
    assert done["event"] == "done"
    assert posted.status_code == 429  # POST keeps its status
