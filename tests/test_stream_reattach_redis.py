"""A client whose connection to one replica drops re-attaches through the load balancer to
another replica, which streams the rest of the run still going on the first (Redis Streams),
with real service processes and a real redis-server.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest
import redis

from .redis_server import RedisServer, redis_server
from .server_helpers import service_process
from .test_stream_reattach import parse, text

QUESTION = {"message": "What is the weather in Paris?"}
QUESTION_TEXT = {"text": QUESTION["message"]}


@pytest.fixture
def redis_srv(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path) as server:
        yield server


@pytest.fixture
def replicas(redis_srv: RedisServer) -> Iterator[list[str]]:
    """Two replicas on one Redis; the weather tool takes 1.5 s; a run whose client left waits
    0.5 s for it to come back; finished runs are kept 1 s."""
    args = _reattach_args(redis_srv)
    env = {"SLOW_TOOL_SECONDS": "1.5"}
    with ExitStack() as stack:
        yield [stack.enter_context(service_process(*args, env=env))[1] for _ in range(2)]


def _reattach_args(redis_srv: RedisServer) -> tuple[str, ...]:
    """The replicas' flags: one Redis, the slow tools, a 0.5 s grace for a client that left,
    finished runs kept 1 s."""
    return (
        "--redis-url", redis_srv.url, "--tools", "tests/slow_tools.py",
        "--reattach-grace", "0.5", "--replay-window", "1",
    )  # fmt: skip


def until_tool_start(client: httpx.Client, base: str) -> list[dict[str, str]]:
    """Stream the question from ``base`` and drop the connection at ``tool_start``."""
    buffer = ""
    with client.stream("POST", f"{base}/api/chat/stream", json=QUESTION) as response:
        for chunk in response.iter_text():
            buffer += chunk
            got = parse(buffer[: buffer.rfind("\n\n") + 2])
            if got and got[-1]["event"] == "tool_start":
                return got
    raise AssertionError("the stream ended before tool_start")


def read_through(
    pool: ThreadPoolExecutor, client: httpx.Client, base: str, last_event_id: str
) -> Future[list[dict[str, str]]]:
    """Re-attach through ``base`` in a thread of ``pool``, once its headers came back: the
    stream's events, when it ends."""
    attached = threading.Event()

    def read() -> list[dict[str, str]]:
        headers = {"Last-Event-ID": last_event_id}
        with client.stream("POST", f"{base}/api/chat/stream", headers=headers) as response:
            assert response.status_code == 200
            attached.set()
            return parse(response.read().decode())

    rest = pool.submit(read)
    assert attached.wait(10)
    return rest


@contextmanager
def two_replicas(
    args: tuple[str, ...], env: dict[str, str]
) -> Iterator[tuple[str, str, httpx.Client, ThreadPoolExecutor]]:
    """Two replicas started with ``args`` and ``env``, a client, and a thread to read with."""
    with (
        service_process(*args, env=env) as (_, a),
        service_process(*args, env=env) as (_, b),
        httpx.Client(timeout=30) as client,
        ThreadPoolExecutor(1) as pool,
    ):
        yield a, b, client, pool


def test_the_rest_of_a_run_comes_from_the_replica_it_runs_on(
    replicas: list[str], redis_srv: RedisServer
) -> None:
    a, b = replicas
    with httpx.Client(timeout=20) as client:
        whole = parse(client.post(f"{a}/api/chat/stream", json=QUESTION).text)
        first = until_tool_start(client, a)
        rest = client.post(
            f"{b}/api/chat/stream", json=QUESTION, headers={"Last-Event-ID": first[-1]["id"]}
        )
        again = client.post(
            f"{b}/api/chat/stream",
            json=QUESTION,
            headers={"Last-Event-ID": parse(rest.text)[-1]["id"]},
        )
        metrics = client.get(f"{a}/metrics").text

    assert rest.status_code == 200
    assert text(first) + text(parse(rest.text)) == text(whole)
    assert [e["event"] for e in parse(rest.text)][-1] == "done"
    assert again.status_code == 204  # after done: nothing more, nothing started
    # the run on A went on while its client read it on B (not cancelled after 0.5 s)
    assert 'agent_executor_requests_total{mode="stream",outcome="cancelled"} 0.0' in metrics
    assert 'agent_executor_tool_calls_total{status="success",tool="get_weather"} 2.0' in metrics


def test_a_stop_sent_to_another_replica_stops_the_run(redis_srv: RedisServer) -> None:
    """The run goes on on ``a``; its client re-attached through ``b``; a stop sent to ``b``
    cancels it on ``a``, and the client reading it on ``b`` is told so (``cancelled``, then
    ``done``). Its tool takes 10 s, so that it is still running when the stop arrives: with
    the module's 1.5 s, a loaded machine let it end first (a ``tool_end`` before the error,
    once in a fresh-clone run)."""
    args = _reattach_args(redis_srv)
    with two_replicas(args, {"SLOW_TOOL_SECONDS": "10"}) as (a, b, client, pool):
        first = until_tool_start(client, a)
        run = first[-1]["id"].split(":")[0]
        rest = read_through(pool, client, b, first[-1]["id"])
        stop = client.delete(f"{b}/api/runs/{run}")
        ended = rest.result(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            metrics = client.get(f"{a}/metrics").text
            if 'outcome="cancelled"} 1.0' in metrics:
                break
            time.sleep(0.1)

    assert stop.status_code == 200
    assert stop.json() == {"run_id": run, "stopped": True}
    assert 'agent_executor_requests_total{mode="stream",outcome="cancelled"} 1.0' in metrics
    assert [e["event"] for e in ended] == ["error", "done"]
    assert ended[0]["data"] == "the run was stopped before it finished"


def test_no_key_is_left_behind_after_the_window(
    replicas: list[str], redis_srv: RedisServer
) -> None:
    a, _ = replicas
    with httpx.Client(timeout=20) as client:
        client.post(f"{a}/api/chat/stream", json=QUESTION)
    keys = redis.Redis.from_url(redis_srv.url)
    try:
        assert keys.keys("agent-executor:run:*")  # kept for the window
        deadline = time.monotonic() + 10
        while keys.keys("agent-executor:run:*") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert keys.keys("agent-executor:run:*") == []
    finally:
        keys.close()


def test_the_ai_sdk_resumes_a_chat_on_another_replica(replicas: list[str]) -> None:
    """``useChat({resume: true})`` after a reload that landed on the other replica: the answer
    in flight, from its ``start``, then live to ``[DONE]``."""
    a, b = replicas
    chat = {
        "id": "chat-1",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", **QUESTION_TEXT}]}],
        "trigger": "submit-message",
    }
    headers = {"X-User-Id": "ada"}
    with httpx.Client(timeout=20) as client:
        buffer = ""
        with client.stream("POST", f"{a}/api/chat/ui", json=chat, headers=headers) as response:
            assert response.status_code == 200
            for chunk in response.iter_text():
                buffer += chunk
                if '"type":"tool-input-available"' in buffer:
                    break
        resumed = client.get(f"{b}/api/chat/ui/chat-1/stream", headers=headers)
        nobody = client.get(f"{b}/api/chat/ui/chat-1/stream", headers={"X-User-Id": "eve"})

    assert resumed.status_code == 200
    assert resumed.headers["x-vercel-ai-ui-message-stream"] == "v1"
    lines = [line[6:] for line in resumed.text.split("\n") if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    chunks = [json.loads(line) for line in lines[:-1]]
    assert chunks[0]["type"] == "start"  # replayed from its start
    assert "In Paris it is" in "".join(
        c.get("delta", "") for c in chunks if c["type"] == "text-delta"
    )
    assert nobody.status_code == 204


@pytest.mark.timeout(90)
def test_a_reader_on_another_replica_is_told_when_the_runs_replica_dies(
    redis_srv: RedisServer,
) -> None:
    """Replica ``a`` is killed while a client reads its run through ``b``: once the run's
    lease in Redis runs out (10 s), ``b`` ends the stream with ``unavailable`` and ``done``
    (before, it sent heartbeats for the run's longest possible life, an hour, then ended
    without a word)."""
    args = ("--redis-url", redis_srv.url, "--tools", "tests/slow_tools.py")
    env = {"SLOW_TOOL_SECONDS": "120"}
    with (
        service_process(*args, env=env) as (process_a, a),
        service_process(*args, env=env) as (_, b),
        httpx.Client(timeout=30) as client,
    ):
        first = until_tool_start(client, a)
        headers = {"Last-Event-ID": first[-1]["id"]}
        with client.stream("POST", f"{b}/api/chat/stream", headers=headers) as response:
            process_a.send_signal(signal.SIGKILL)
            process_a.wait(10)
            ended = parse(response.read().decode())

    assert [e["event"] for e in ended] == ["error", "done"]
    assert ended[0]["data"] == "the replica running the run went away before it finished"


@pytest.mark.timeout(90)
def test_a_redis_restart_mid_run_costs_its_reader_on_another_replica_nothing(
    redis_srv: RedisServer,
) -> None:
    """Redis goes away for two seconds and comes back empty (it keeps nothing on disk) while
    the run goes on on ``a`` and its client reads it through ``b``. The client gets the whole
    rest of the run and ``done``, and the run is not cancelled. Before, ``a`` stopped mirroring
    at its first error, ``b``'s stream broke off without ``done``, and ``a`` cancelled the run
    its client was still reading."""
    args = ("--redis-url", redis_srv.url, "--tools", "tests/slow_tools.py")
    args += ("--reattach-grace", "0.5")
    env = {"SLOW_TOOL_SECONDS": "4"}
    with two_replicas(args, env) as (a, b, client, pool):
        first = until_tool_start(client, a)
        rest = read_through(pool, client, b, first[-1]["id"])
        redis_srv.stop()
        time.sleep(2.0)
        redis_srv.start()
        ended = rest.result(timeout=40)
        whole = parse(client.post(f"{a}/api/chat/stream", json=QUESTION).text)
        metrics = client.get(f"{a}/metrics").text

    assert [e["event"] for e in ended][-1] == "done"
    assert "error" not in [e["event"] for e in ended]
    assert text(first) + text(ended) == text(whole)
    assert 'agent_executor_requests_total{mode="stream",outcome="cancelled"} 0.0' in metrics
    assert 'agent_executor_tool_calls_total{status="success",tool="get_weather"} 2.0' in metrics


@pytest.mark.timeout(60)
def test_a_re_attach_redis_cannot_answer_is_a_503_not_a_204(
    replicas: list[str], redis_srv: RedisServer
) -> None:
    """With Redis down, a replica cannot tell whether another one still runs the run: it
    answers 503 ``unavailable`` (try again), not 204, which would tell ``EventSource`` and
    the AI SDK that the run is over."""
    _, b = replicas
    redis_srv.stop()
    with httpx.Client(timeout=30) as client:
        stream = client.post(
            f"{b}/api/chat/stream", json=QUESTION, headers={"Last-Event-ID": "a-run:3"}
        )
        events = client.get(f"{b}/api/runs/a-run/events")
        stop = client.delete(f"{b}/api/runs/a-run")
        resume = client.get(f"{b}/api/chat/ui/a-chat/stream")

    for answer in (stream, events, stop, resume):
        assert answer.status_code == 503, answer.text
        assert answer.json()["error"]["code"] == "unavailable"
        assert answer.headers["Retry-After"] == "5"
        assert "127.0.0.1" not in answer.text  # where Redis is goes to the log only


@pytest.mark.timeout(60)
def test_a_stop_on_the_runs_own_replica_reaches_its_reader_on_another(
    redis_srv: RedisServer,
) -> None:
    """The client that started the run stops it on ``a`` while another of its tabs reads the
    run through ``b``; the tool takes three seconds to stop. The reader on ``b`` gets
    ``cancelled`` and ``done``. Before, ``a`` stopped mirroring the moment the stop began,
    before the run's log was closed, so the closing events never reached Redis and ``b``
    ended the stream with ``unavailable`` once the keys ran out."""
    args = _reattach_args(redis_srv)
    env = {"SLOW_TOOL_SECONDS": "30", "SLOW_TOOL_CANCEL_SECONDS": "3"}
    with two_replicas(args, env) as (a, b, client, pool):
        first = until_tool_start(client, a)
        run = first[-1]["id"].split(":")[0]
        rest = read_through(pool, client, b, first[-1]["id"])
        stop = client.delete(f"{a}/api/runs/{run}")
        ended = rest.result(timeout=40)

    assert stop.json() == {"run_id": run, "stopped": True}
    assert [e["event"] for e in ended] == ["error", "done"]
    assert ended[0]["data"] == "the run was stopped before it finished"
