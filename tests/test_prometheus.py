"""The metrics, dashboard and alert rules against real software: ``promtool`` lints ``/metrics``
and checks the configuration and rules, and a real Prometheus scrapes the real service after
traffic of every kind and evaluates every query of the dashboard and of ``alerts.yml``.

Needs Debian's ``prometheus`` package (``prometheus`` and ``promtool``): skipped locally when
it is missing, a failure in CI (``CI=true``; ``.ci/run`` installs it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from .fakes.openai_server import FakeOpenAIServer, Response, Stream, tool_call_stream
from .server_helpers import free_port, service_process
from .test_grafana import (
    ALERTS,
    GRAFANA,
    PROMETHEUS_CONFIG,
    alert_queries,
    concrete,
    dashboard_queries,
    load_dashboard,
    without_threshold,
)

COMPOSE_TARGET = "agent-executor:8080"


def require(program: str) -> str:
    """The program's path; skip without it, except in CI, where it must be installed."""
    path = shutil.which(program)
    if path is None:
        message = f"{program} is not installed (Debian package 'prometheus')"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def prometheus_config_for(tmp: Path, target: str, *, scrape_interval: str = "15s") -> Path:
    """grafana/prometheus.yml with the compose target replaced and the rules path absolute."""
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text(encoding="utf-8"))
    config["global"]["scrape_interval"] = scrape_interval
    config["global"]["evaluation_interval"] = scrape_interval
    config["rule_files"] = [str(GRAFANA / name) for name in config["rule_files"]]
    for job in config["scrape_configs"]:
        for static in job["static_configs"]:
            assert static["targets"] == [COMPOSE_TARGET]
            static["targets"] = [target]
    path = tmp / "prometheus.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def promtool(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [require("promtool"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


# ------------------------------------------------------------------ promtool, no service


def test_promtool_accepts_the_prometheus_config(tmp_path: Path) -> None:
    result = promtool("check", "config", str(prometheus_config_for(tmp_path, "127.0.0.1:8080")))

    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_promtool_accepts_the_alert_rules() -> None:
    result = promtool("check", "rules", str(ALERTS))

    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alert_queries())} rules found" in result.stdout


def test_the_alert_rules_fire_as_documented() -> None:
    """promtool's rule unit tests: each alert fires on a scripted series, and not before."""
    result = promtool("test", "rules", str(GRAFANA / "alerts_test.yml"))

    assert result.returncode == 0, result.stdout + result.stderr


# ------------------------------------------------------------------ service + Prometheus


@dataclass
class Stack:
    service: str
    prometheus: str
    metrics_text: str


@contextmanager
def run_prometheus(config: Path, tmp: Path) -> Iterator[str]:
    """A real Prometheus on 127.0.0.1 with its storage in ``tmp``; yields its base URL."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with (tmp / "prometheus.log").open("w") as log:
        process = subprocess.Popen(
            [
                require("prometheus"),
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            try:
                _wait_until(
                    lambda: process.poll() is None and _get(f"{base}/-/ready") == 200,
                    15,
                    "Prometheus did not become ready",
                    lambda: process.poll() is not None,
                )
            except AssertionError as exc:
                log.flush()
                output = (tmp / "prometheus.log").read_text(encoding="utf-8")
                raise AssertionError(f"{exc}:\n{output}") from None
            yield base
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def fake_model(*responses: Response) -> Iterator[FakeOpenAIServer]:
    """A scripted OpenAI-compatible server on its own event loop in a thread (the stack is
    built synchronously, and the traffic's ``asyncio.run`` holds the main thread)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fake-openai", daemon=True)
    thread.start()
    fake = FakeOpenAIServer()
    try:
        asyncio.run_coroutine_threadsafe(fake.start(), loop).result(10)
        fake.script(*responses)
        yield fake
    finally:
        asyncio.run_coroutine_threadsafe(fake.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def agents_file(tmp: Path, fake: FakeOpenAIServer) -> Path:
    """The service's agents: ``assistant`` (the default: demo model, the ``--tools``), a
    ``triage`` agent on the fake model that hands over to ``billing``, and ``desk``, a group
    of two demo agents taking one round each."""
    path = tmp / "agents.json"
    config = {
        "agents": {
            "assistant": {},
            "triage": {
                "model": "openai/triage-mini",
                "api_base": fake.base_url,
                "tools": [],
                "handoffs": ["billing"],
            },
            "billing": {"tools": []},
            "researcher": {"tools": []},
        },
        "groups": {"desk": {"agents": ["researcher", "billing"]}},
    }
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def flows_file(tmp: Path) -> Path:
    """``pipeline``: the researcher's answer goes to billing (two agent nodes)."""
    path = tmp / "flows.json"
    flow = {
        "start": "ask",
        "nodes": {"ask": {"agent": "researcher"}, "settle": {"agent": "billing"}},
        "edges": [{"from": "ask", "to": "settle"}],
    }
    path.write_text(json.dumps({"flows": {"pipeline": flow}}), encoding="utf-8")
    return path


def prices_file(tmp: Path) -> Path:
    """Prices for the demo model and the fake one, so every run has a known cost."""
    path = tmp / "prices.json"
    prices = {
        "demo": {"input": 1.0, "output": 2.0},
        "openai/triage-mini": {"input": 3, "output": 6},
    }
    path.write_text(json.dumps(prices), encoding="utf-8")
    return path


def _get(url: str) -> int | None:
    try:
        return httpx.get(url, timeout=1).status_code
    except httpx.HTTPError:
        return None


def _wait_until(
    condition: Callable[[], bool],
    seconds: float,
    message: str,
    abort: Callable[[], bool] = lambda: False,
) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        if abort():
            break
        time.sleep(0.1)
    raise AssertionError(message)


def query(prometheus: str, expr: str) -> dict[str, Any]:
    """The JSON answer of an instant query (``status``, ``data``, or ``error``)."""
    response = httpx.post(f"{prometheus}/api/v1/query", data={"query": expr}, timeout=10)
    body: dict[str, Any] = response.json()
    return body


def last_scrape(prometheus: str) -> float | None:
    """The time of the latest scrape of the service."""
    body = query(prometheus, 'timestamp(up{job="agent-executor"})')
    results = body.get("data", {}).get("result", [])
    return float(results[0]["value"][1]) if results else None


def wait_for_scrapes_after(prometheus: str, moment: float, count: int, seconds: float) -> None:
    """Wait until Prometheus has scraped the service ``count`` times after ``moment``."""
    seen: set[float] = set()

    def scraped() -> bool:
        stamp = last_scrape(prometheus)
        if stamp is not None and stamp > moment:
            seen.add(stamp)
        return len(seen) >= count

    _wait_until(scraped, seconds, f"fewer than {count} scrapes after the traffic")


async def drive_traffic(base: str) -> None:
    """Requests of every kind; each user id has its own rate-limit allowance (5/minute)."""

    def user(name: str) -> dict[str, str]:
        return {"X-User-Id": name}

    async with httpx.AsyncClient(base_url=base, timeout=20) as client:
        # Bad requests: refused by the HTTP layer before any run (400, no run metrics).
        for body in ({"message": ""}, {"mesage": "typo"}, {"message": "hi", "events": "xml"}):
            response = await client.post("/api/chat", json=body, headers=user("bad"))
            assert response.status_code == 400, body
        response = await client.post("/api/chat", content=b"{not json", headers=user("bad"))
        assert response.status_code == 400

        # Guards, cheapest first: the rate limit lets 5 through to input validation
        # (control characters: invalid_input), then refuses 2 (rate_limited).
        statuses = [
            (
                await client.post(
                    "/api/chat", json={"message": "bad\x01input"}, headers=user("flood")
                )
            ).status_code
            for _ in range(7)
        ]
        assert statuses[-2:] == [429, 429], statuses
        assert 429 not in statuses[:5], statuses
        rejected = await client.post(
            "/api/chat/stream", json={"message": "bad\x02input"}, headers=user("guarded-stream")
        )
        assert rejected.status_code == 400  # refused before the stream: counted all the same
        assert rejected.json()["error"]["code"] == "invalid_input"

        async def stream(message: str, name: str) -> str:
            async with client.stream(
                "POST", "/api/chat/stream", json={"message": message}, headers=user(name)
            ) as response:
                assert response.status_code == 200
                return "".join([line + "\n" async for line in response.aiter_lines()])

        async def chat(message: str, name: str) -> dict[str, Any]:
            response = await client.post("/api/chat", json={"message": message}, headers=user(name))
            assert response.status_code == 200, response.text
            result: dict[str, Any] = response.json()
            return result

        async def disconnect(name: str) -> None:
            async with client.stream(
                "POST",
                "/api/chat/stream",
                json={"message": "tell me a long story"},
                headers=user(name),
            ) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: ") and line.strip() != "data:":
                        break  # leave mid-stream: the connection closes

        # More runs than --max-concurrency 2 at once, so some wait in the queue.
        results = await asyncio.gather(
            stream("hello there", "s1"),
            stream("how are you today", "s2"),
            stream("what is the weather in Paris?", "s3"),
            chat("what is the weather and the time in Rome?", "e1"),
            chat("hello", "e2"),
            chat("what is the weather in Errorville?", "tool-error"),
            chat("what is the weather in Slowtown?", "tool-timeout"),
            disconnect("d1"),
        )
        assert all(text.rstrip().endswith("event: done\ndata:") for text in results[:3])
        statuses = [call["status"] for call in results[5]["tool_calls"]]
        assert statuses == ["error"]
        statuses = [call["status"] for call in results[6]["tool_calls"]]
        assert statuses == ["timeout"]

        # Orchestration: a handoff (triage's fake model calls transfer_to_billing) and a group
        # of two agents (a round each).
        response = await client.post(
            "/api/chat/stream",
            json={"message": "Was invoice 42 paid?", "agent": "triage", "events": "json"},
            headers=user("handoff"),
        )
        assert response.status_code == 200, response.text
        kinds = [line[7:] for line in response.text.splitlines() if line.startswith("event: ")]
        assert kinds[:3] == ["tool_start", "tool_end", "agent_selected"], kinds
        assert kinds[-1] == "done", kinds
        group = await client.post(
            "/api/chat", json={"message": "hello", "agent": "desk"}, headers=user("group")
        )
        assert group.status_code == 200, group.text
        assert group.headers["X-Agent"] == "desk"
        flow = await client.post(
            "/api/chat", json={"message": "hello", "agent": "pipeline"}, headers=user("flow")
        )
        assert flow.status_code == 200, flow.text

        # Spend: the user budget (a millionth of a dollar a day) lets a user's first run
        # through and refuses the next one until midnight UTC.
        await chat("hello", "spender")
        refused = await client.post("/api/chat", json={"message": "hi"}, headers=user("spender"))
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"]["code"] == "budget_exceeded"


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(text: str, name: str, **labels: str) -> float:
    return samples(text).get((name, frozenset(labels.items())), 0.0)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The service (the agents of :func:`agents_file`: demo model, failing tools, a handoff, a
    group; 5/minute rate limit, 2 permits) scraped every second by a real Prometheus, after
    traffic of every kind and two scrapes since."""
    require("prometheus")
    require("promtool")
    tmp = tmp_path_factory.mktemp("prometheus")
    handing_over = Stream(tool_call_stream([("call_1", "transfer_to_billing", {})], usage=(20, 5)))
    with contextlib.ExitStack() as parts:
        fake = parts.enter_context(fake_model(handing_over))
        options = ("--agents", str(agents_file(tmp, fake)), "--tools", "tests/obs_tools.py")
        options += ("--rate-limit", "5/minute", "--max-concurrency", "2")
        options += ("--flows", str(flows_file(tmp)), "--prices", str(prices_file(tmp)))
        options += ("--user-budget", "0.000001/day")
        options += ("--reattach-grace", "0")  # a client that leaves cancels its run at once
        _, service = parts.enter_context(service_process(*options, env={"LOG_LEVEL": "WARNING"}))
        config = prometheus_config_for(tmp, service.removeprefix("http://"), scrape_interval="1s")
        prometheus = parts.enter_context(run_prometheus(config, tmp))
        _wait_until(lambda: last_scrape(prometheus) is not None, 15, "no scrape of the service")
        asyncio.run(drive_traffic(service))

        def settled() -> bool:
            text = httpx.get(f"{service}/metrics", timeout=5).text
            return (
                value(text, "agent_executor_sse_disconnects_total") >= 1
                and value(text, "agent_executor_in_flight_requests") == 0
                and value(text, "agent_executor_sse_streams_active") == 0
            )

        _wait_until(settled, 10, "the runs did not finish")
        metrics_text = httpx.get(f"{service}/metrics", timeout=5).text
        wait_for_scrapes_after(prometheus, time.time(), 2, 10)
        yield Stack(service, prometheus, metrics_text)


def test_the_traffic_reached_every_path(stack: Stack) -> None:
    text = stack.metrics_text

    def at_least_one(name: str, **labels: str) -> None:
        assert value(text, name, **labels) >= 1, (name, labels)

    for mode in ("stream", "execute"):
        at_least_one("agent_executor_requests_total", mode=mode, outcome="success")
        at_least_one("agent_executor_requests_total", mode=mode, outcome="invalid_input")
        at_least_one("agent_executor_time_to_first_token_seconds_count", mode=mode)
    at_least_one("agent_executor_requests_total", mode="stream", outcome="cancelled")
    at_least_one("agent_executor_requests_total", mode="execute", outcome="rate_limited")
    at_least_one("agent_executor_guard_rejections_total", guard="rate_limit", code="rate_limited")
    at_least_one(
        "agent_executor_guard_rejections_total", guard="input_validation", code="invalid_input"
    )
    for status in ("success", "error", "timeout"):
        at_least_one("agent_executor_tool_calls_total", tool="get_weather", status=status)
    at_least_one("agent_executor_tool_calls_total", tool="get_time", status="success")
    at_least_one("agent_executor_queue_wait_seconds_count")
    at_least_one("agent_executor_sse_disconnects_total")
    at_least_one("agent_executor_llm_requests_total", model="demo", outcome="success")
    at_least_one("agent_executor_llm_tokens_total", model="demo", type="output")
    at_least_one("agent_executor_handoffs_total", agent="billing")
    for agent in ("researcher", "billing"):
        at_least_one("agent_executor_group_rounds_total", group="desk", agent=agent)
    for node in ("ask", "settle"):
        at_least_one(
            "agent_executor_flow_node_runs_total", flow="pipeline", node=node, status="success"
        )
    at_least_one("agent_executor_budget_refusals_total", scope="user")
    at_least_one(
        "agent_executor_guard_rejections_total", guard="user_budget", code="budget_exceeded"
    )
    for model in ("demo", "openai/triage-mini"):
        assert value(text, "agent_executor_llm_cost_usd_total", model=model) > 0, model
    at_least_one("agent_executor_run_cost_usd_count")
    assert value(text, "agent_executor_queued_requests") == 0


def test_promtool_finds_no_problems_in_the_metrics_after_traffic(stack: Stack) -> None:
    result = promtool("check", "metrics", stdin=stack.metrics_text)

    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def _check(stack: Stack, expr: str) -> str | None:
    """Why ``expr`` is not acceptable on this Prometheus (None if it is)."""
    body = query(stack.prometheus, expr)
    if body.get("status") != "success":
        return f"invalid: {body.get('error')}"
    result = body["data"]["result"]
    if not result:
        return "no data"
    if body["data"]["resultType"] != "vector":
        return f"a {body['data']['resultType']}, not an instant vector"
    if not any(math.isfinite(float(series["value"][1])) for series in result):
        return "only NaN/Inf values"
    return None


def test_every_dashboard_query_is_valid_and_returns_data(stack: Stack) -> None:
    failures = []
    for title, legend, expr in dashboard_queries():
        promql = concrete(expr)
        problem = _check(stack, promql)
        if problem is None:
            result = query(stack.prometheus, promql)["data"]["result"]
            for label in re.findall(r"\{\{\s*(\w+)\s*\}\}", legend):
                if any(label not in series["metric"] for series in result):
                    problem = f"legend {{{{{label}}}}} has no value"
        if problem is not None:
            failures.append(f"{title}: {promql}: {problem}")

    assert not failures, "\n".join(failures)


def test_every_alert_query_is_valid_and_returns_data_without_its_threshold(
    stack: Stack,
) -> None:
    failures = []
    for name, expr in alert_queries():
        body = query(stack.prometheus, expr)
        if body.get("status") != "success":
            failures.append(f"{name}: invalid: {body.get('error')}")
        problem = _check(stack, without_threshold(expr))
        if problem is not None:
            failures.append(f"{name}: {without_threshold(expr)}: {problem}")

    assert not failures, "\n".join(failures)


def test_prometheus_loaded_every_rule_and_evaluates_it_without_errors(stack: Stack) -> None:
    def rules() -> dict[str, dict[str, Any]]:
        response = httpx.get(f"{stack.prometheus}/api/v1/rules", timeout=5)
        groups = response.json()["data"]["groups"]
        return {rule["name"]: rule for group in groups for rule in group["rules"]}

    assert set(rules()) == {name for name, _ in alert_queries()}
    _wait_until(
        lambda: all(rule.get("health") == "ok" for rule in rules().values()),
        5,
        f"unhealthy rules: {rules()}",
    )


def test_the_template_variables_find_values(stack: Stack) -> None:
    variables = [v for v in load_dashboard()["templating"]["list"] if v["type"] == "query"]
    for variable in variables:
        match = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", variable["definition"])
        assert match is not None
        metric, label = match.groups()
        response = httpx.get(
            f"{stack.prometheus}/api/v1/label/{label}/values",
            params={"match[]": metric},
            timeout=5,
        )
        values = set(response.json()["data"])
        expected = {
            "mode": {"stream", "execute"},
            "tool": {"get_weather", "get_time", "unknown"},
        }.get(variable["name"], set())
        assert values and expected <= values, (variable["name"], values)
