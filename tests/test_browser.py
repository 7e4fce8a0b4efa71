"""Browser tests of the built-in chat page (``server/static/index.html``) against the real service.

Playwright drives Debian's Chromium (``apt-get install chromium``); no browser is ever downloaded.
Without ``/usr/bin/chromium`` the tests are skipped, except on CI (``CI=true``), where they fail.
The service runs as a subprocess with ``tests/browser_tools.py``, whose ``get_weather`` takes a
second, so the running tool can be seen. The reasoning test serves the app in this process
instead, on a ``ScriptedModel`` that streams reasoning before its answer. The page's newer parts
(API key, approvals, ``ask_user``, Stop, Markdown) are tested in ``tests/test_chat_page.py``,
which reuses the fixtures and helpers here. Tests save a screenshot under
``tests/artifacts/screenshots/`` (not committed) to look at when one fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import pytest_asyncio
from aiohttp.test_utils import TestServer
from playwright.async_api import (
    Browser,
    Locator,
    Page,
    Request,
    Route,
    async_playwright,
    expect,
)
from prometheus_client import CollectorRegistry

from agent_executor import AgentExecutor
from agent_executor.models.base import ModelChunk
from agent_executor.models.scripted import Pause, ScriptedModel, ScriptItem
from server import create_app

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-proxy-server",
]
ROOT = Path(__file__).resolve().parent.parent
TOOLS = Path(__file__).with_name("browser_tools.py")
SESSION_KEY = "agent-executor.session_id"  # the sessionStorage key used by the page
WAIT_MS = 10_000  # upper bound of every UI wait (the demo model answers in ~2 s)
SCREENSHOTS = ROOT / "tests" / "artifacts" / "screenshots"

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(60)]


@dataclass
class Service:
    base_url: str
    log_path: Path


def chromium_path() -> str:
    """Debian's Chromium; without it the test is skipped (and fails on CI)."""
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing (apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}; CI must run the browser tests")
        pytest.skip(message)
    return str(CHROMIUM)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(base_url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log = log_path.read_text(errors="replace")
            pytest.fail(f"the service exited with {process.returncode}:\n{log}")
        try:
            with opener.open(f"{base_url}/api/health", timeout=1) as response:
                if json.load(response)["data"]["status"] == "healthy":
                    return
        except OSError:
            pass
        time.sleep(0.1)
    pytest.fail(f"the service did not become healthy within 10 s:\n{log_path.read_text()}")


@contextmanager
def run_service(log_path: Path, *args: str) -> Iterator[Service]:
    """``python -m server`` on 127.0.0.1 with ``args``, its output in ``log_path``."""
    port = _free_port()
    command = [
        sys.executable, "-m", "server", "--host", "127.0.0.1", "--port", str(port),
        "--heartbeat", "15", "--shutdown-grace", "1", *args,
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "LOG_LEVEL": "INFO"},
        )  # fmt: skip
    try:
        base_url = f"http://127.0.0.1:{port}"
        _wait_healthy(base_url, process, log_path)
        yield Service(base_url, log_path)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def service(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    log_path = tmp_path_factory.mktemp("browser") / "service.log"
    with run_service(log_path, "--model", "demo", "--tools", str(TOOLS)) as service:
        yield service


@asynccontextmanager
async def launched(chromium: str) -> AsyncIterator[Browser]:
    """A headless Chromium driven by Playwright, closed on the way out."""
    # launch() already gives every run a fresh temporary profile (user data dir)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            await browser.close()


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser, service: Service) -> AsyncIterator[Page]:
    context = await browser.new_context(base_url=service.base_url)
    page = await context.new_page()
    try:
        yield page
    finally:
        await context.close()


def record_stream_requests(page: Page) -> list[Request]:
    """Every request the page makes to the chat stream endpoint, as they happen."""
    seen: list[Request] = []

    def on_request(request: Request) -> None:
        if urlsplit(request.url).path == "/api/chat/stream":
            seen.append(request)

    page.on("request", on_request)
    return seen


async def ask(page: Page, text: str) -> None:
    await page.locator("#input").fill(text)
    await page.locator("#input").press("Enter")


async def chat_events(page: Page) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = await page.evaluate("window.__chatEvents")
    return events


async def screenshot(page: Page, name: str) -> None:
    """Save what the page looks like now as ``tests/artifacts/screenshots/<name>.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=SCREENSHOTS / f"{name}.png", full_page=True)


def words(text: str | None) -> str:
    """``text`` with its whitespace normalised (rendered Markdown adds line breaks)."""
    return " ".join((text or "").split())


ANSWER_TEXT = """(bubble) => [...bubble.querySelectorAll('.answer > .text')]
  .map((block) => block.textContent).join(' ')"""


async def answer_text(bubble: Locator) -> str:
    """The model's text in a reply bubble (not its tool records, cards, notes or errors)."""
    return words(await bubble.evaluate(ANSWER_TEXT))


PARTIAL_TEXT = f"""() => {{
  const bubble = [...document.querySelectorAll('.message.assistant')].at(-1);
  const text = bubble ? ({ANSWER_TEXT})(bubble) : '';
  return bubble && !bubble.classList.contains('done') && text.trim() ? text : null;
}}"""


async def check_weather_reply(page: Page, city: str, replies_before: int) -> None:
    """The question about ``city`` was just sent: watch the reply stream in, with its tool."""
    reply = page.locator(".message.assistant").nth(replies_before)
    record = reply.locator("details.tool-call")
    await expect(record).to_have_attribute("data-status", "running", timeout=WAIT_MS)
    await expect(record.locator("summary")).to_have_text("get_weather running…")
    call_id = await record.get_attribute("data-call-id")
    assert call_id
    await expect(page.locator("#input")).to_be_disabled()
    await expect(page.locator("#stop")).to_be_visible()
    # the tool takes a second: the text so far is on the page, the reply is not finished
    partial = words(
        await (await page.wait_for_function(PARTIAL_TEXT, timeout=WAIT_MS)).json_value()
    )

    await expect(record).to_have_attribute("data-status", "success", timeout=WAIT_MS)
    await expect(reply).to_have_class(re.compile(r"\bdone\b"), timeout=WAIT_MS)
    await expect(reply).to_contain_text(city)
    final = await answer_text(reply)
    assert 0 < len(partial) < len(final)
    assert final.startswith(partial)
    await expect(record).to_have_count(1)  # the record stays, folded, with how it went
    await expect(record.locator("summary")).to_have_text(re.compile(r"^get_weather success · "))
    await expect(page.locator("#input")).to_be_enabled()
    await expect(page.locator("#stop")).to_be_hidden()
    await expect(page.locator(".turn-error")).to_have_count(0)

    events = await chat_events(page)
    types = [event["type"] for event in events]
    assert types[-1] == "done"
    assert types.count("done") == replies_before + 1
    ends = [index for index, kind in enumerate(types) if kind == "done"]
    this_reply = events[ends[-2] + 1 :] if len(ends) > 1 else events
    this_types = [event["type"] for event in this_reply]
    assert "error" not in this_types
    start = next(e["data"] for e in this_reply if e["type"] == "tool_start")
    end = next(e["data"] for e in this_reply if e["type"] == "tool_end")
    assert this_types.index("tool_start") < this_types.index("tool_end")
    assert start["tool"] == end["tool"] == "get_weather"
    assert start["call_id"] == end["call_id"] == call_id
    assert start["arguments"] == {"city": city}
    assert end["status"] == "success"
    assert this_reply[-1]["data"]["finish_reason"] == "stop"
    streamed = "".join(e["data"]["text"] for e in this_reply if e["type"] == "message")
    assert words(streamed) == final


async def test_fetch_stream_shows_tool_and_growing_text_and_keeps_the_session(
    page: Page,
) -> None:
    requests = record_stream_requests(page)
    await page.goto("/")

    await ask(page, "What's the weather in Paris?")
    await check_weather_reply(page, "Paris", replies_before=0)

    await ask(page, "And the weather in Rome?")
    await check_weather_reply(page, "Rome", replies_before=1)
    await screenshot(page, "weather-fetch")

    assert [request.method for request in requests] == ["POST", "POST"]
    bodies = [json.loads(request.post_data or "") for request in requests]
    assert [body["message"] for body in bodies] == [
        "What's the weather in Paris?",
        "And the weather in Rome?",
    ]
    assert {body["events"] for body in bodies} == {"json"}
    stored = await page.evaluate(f"sessionStorage.getItem('{SESSION_KEY}')")
    assert stored
    assert bodies[0]["session_id"] == bodies[1]["session_id"] == stored
    await expect(page.locator(".message.user")).to_have_count(2)


async def test_eventsource_toggle_streams_the_same_reply(page: Page) -> None:
    requests = record_stream_requests(page)
    await page.goto("/")
    await page.locator("#use-eventsource").check()

    await ask(page, "What's the weather in Paris?")
    await check_weather_reply(page, "Paris", replies_before=0)
    # closed on done, so it never reconnects (which would run the request again)
    assert await page.evaluate("window.__chatEventSource.readyState") == 2

    await ask(page, "And the weather in Rome?")
    await check_weather_reply(page, "Rome", replies_before=1)
    assert await page.evaluate("window.__chatEventSource.readyState") == 2

    assert [request.method for request in requests] == ["GET", "GET"]
    queries = [parse_qs(urlsplit(request.url).query) for request in requests]
    assert [query["message"] for query in queries] == [
        ["What's the weather in Paris?"],
        ["And the weather in Rome?"],
    ]
    assert all(query["events"] == ["json"] for query in queries)
    stored = await page.evaluate(f"sessionStorage.getItem('{SESSION_KEY}')")
    assert queries[0]["session_id"] == queries[1]["session_id"] == [stored]


RAW_EVENTSOURCE = """() => new Promise((resolve) => {
  const out = [];
  const es = new EventSource('/api/chat/stream?message=' + encodeURIComponent('weather in Oslo?') + '&session_id=browser-test');
  window.__rawEventSource = es;
  es.addEventListener('message', e => out.push(['message', e.data]));
  es.addEventListener('tool_start', e => out.push(['tool_start', e.data]));
  es.addEventListener('error', e => { out.push(['error', e.data ?? null]); es.close(); });
  es.addEventListener('done', e => { out.push(['done', e.data]); es.close(); resolve(out); });
})"""  # noqa: E501 -- the snippet's long lines are kept as written


async def test_raw_eventsource_in_text_mode(page: Page, service: Service) -> None:
    await page.goto("/")
    before = await asyncio.to_thread(stream_runs, service.base_url)
    out = await asyncio.wait_for(page.evaluate(RAW_EVENTSOURCE), timeout=20)

    kinds = [kind for kind, _ in out]
    assert "Oslo" in "".join(data for kind, data in out if kind == "message")
    assert ["tool_start", "get_weather"] in out
    assert kinds.count("done") == 1
    assert kinds[-1] == "done"
    assert "error" not in kinds
    assert await page.evaluate("window.__rawEventSource.readyState") == 2  # CLOSED
    # The service ran the request exactly once: no reconnect ran it again. (A browser retries
    # after about 3 s; wait past that.)
    await asyncio.sleep(3.5)
    assert await asyncio.to_thread(stream_runs, service.base_url) == before + 1


def stream_runs(base_url: str) -> float:
    """Streamed runs the service has finished so far, whatever their outcome."""
    with urllib.request.urlopen(f"{base_url}/metrics", timeout=5) as response:
        text = response.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith('agent_executor_requests_total{mode="stream"')
    )


async def test_empty_message_is_not_sent_and_http_errors_show_in_the_transcript(
    page: Page,
) -> None:
    requests = record_stream_requests(page)
    await page.goto("/")
    send, error = page.locator("#send"), page.locator(".message.assistant .turn-error")

    # an empty (or blank) message is prevented on the page: Send stays disabled, Enter does nothing
    await expect(send).to_be_disabled()
    await page.locator("#input").fill("   ")
    await expect(send).to_be_disabled()
    await page.locator("#input").press("Enter")
    await expect(page.locator(".message.user")).to_have_count(0)
    await expect(error).to_have_count(0)

    # a request the service refuses (session_id over 256 characters): its 400 JSON error is shown
    await page.evaluate(f"sessionStorage.setItem('{SESSION_KEY}', 'x'.repeat(300))")
    await page.reload()
    await ask(page, "hello")
    await expect(error).to_be_visible(timeout=WAIT_MS)
    await expect(error).to_contain_text("HTTP 400")
    await expect(error).to_contain_text("session_id")
    await expect(page.locator("#input")).to_be_enabled()
    await expect(page.locator(".message.assistant.failed")).to_have_count(1)  # kept
    await screenshot(page, "http-400")
    assert len(requests) == 1  # only the refused one: the blank message never left the page
    assert requests[0].method == "POST"


async def test_a_refused_run_stays_in_the_transcript_after_the_next_message(
    page: Page,
) -> None:
    await page.goto("/")
    failed, error = page.locator(".message.assistant").first, page.locator(".turn-error")

    await ask(page, "hello\x07")  # control characters are refused by InputValidationGuard
    await expect(error).to_be_visible(timeout=WAIT_MS)
    await expect(error).to_contain_text("HTTP 400 invalid_input")  # refused before any stream
    await expect(error).to_contain_text("control characters")
    await expect(page.locator("#input")).to_be_enabled()
    assert await chat_events(page) == []

    await ask(page, "hello")
    answered = page.locator(".message.assistant").nth(1)
    await expect(answered).to_have_class(re.compile(r"\bdone\b"), timeout=WAIT_MS)
    await expect(answered.locator(".turn-error")).to_have_count(0)
    # the failed reply keeps its bubble and its error
    await expect(failed).to_have_class(re.compile(r"\bfailed\b"))
    await expect(failed.locator(".turn-error")).to_contain_text("invalid_input")
    await expect(error).to_have_count(1)
    await screenshot(page, "error-kept")


TRICKY_STREAM = (
    "\ufeff: heartbeat\r\n"
    "id: 1\r\nevent: message\r\ndata: a\r\ndata:b\r\n\r\n"  # CRLF, two data lines, "data:b"
    "event: tool_start\rdata: x\r\r"  # CR only; lastEventId carries over
    "data\n\n"  # a bare field name: empty data, still dispatched, as "message"
    "event: ignored\n\n"  # no data: not dispatched
    'id: 7\nevent: done\nretry: 10\nunknown: field\ndata: {"é": "☃"}\n\n'
    "event: message\ndata: cut off"  # never finished by a blank line: dropped
)

PARSE_AT_EVERY_SPLIT = """(text) => {
  const bytes = new TextEncoder().encode(text);
  const parse = (chunks) => {
    const got = [];
    const parser = window.__createSSEParser((type, data, id) => got.push([type, data, id]));
    for (const chunk of chunks) parser.push(chunk);
    parser.end();
    return JSON.stringify(got);
  };
  const results = new Set();
  for (let cut = 0; cut <= bytes.length; cut++) {
    results.add(parse([bytes.slice(0, cut), bytes.slice(cut)]));
  }
  results.add(parse(Array.from(bytes, (byte) => Uint8Array.of(byte))));
  return [...results].map((result) => JSON.parse(result));
}"""

NATIVE_EVENTSOURCE = """() => new Promise((resolve) => {
  const got = [];
  const source = new EventSource('/sse-fixture');
  for (const type of ['message', 'tool_start', 'done']) {
    source.addEventListener(type, (e) => got.push([type, e.data, e.lastEventId]));
  }
  source.addEventListener('error', () => { source.close(); resolve(got); });
})"""


async def test_sse_parser_matches_the_browsers_eventsource(page: Page) -> None:
    await page.goto("/")
    await page.route(
        "**/sse-fixture",
        lambda route: route.fulfill(
            status=200, body=TRICKY_STREAM.encode(), content_type="text/event-stream"
        ),
    )
    native = await asyncio.wait_for(page.evaluate(NATIVE_EVENTSOURCE), timeout=10)
    assert native == [
        ["message", "a\nb", "1"],
        ["tool_start", "x", "1"],
        ["message", "", "1"],
        ["done", '{"é": "☃"}', "7"],
    ]
    # the page's parser gives the same events however the bytes are split into chunks
    assert await page.evaluate(PARSE_AT_EVERY_SPLIT, TRICKY_STREAM) == [native]


# ---- the page's own client tool: get_browser_timezone ----------------------------------------

TOOL_RESULT_PATH = "/api/chat/tool-result"


def record_tool_results(page: Page) -> list[Request]:
    """Every request the page makes to the tool-result endpoint."""
    seen: list[Request] = []
    page.on(
        "request",
        lambda request: (
            seen.append(request) if urlsplit(request.url).path == TOOL_RESULT_PATH else None
        ),
    )
    return seen


@pytest_asyncio.fixture(loop_scope="module")
async def tokyo_page(browser: Browser, service: Service) -> AsyncIterator[Page]:
    """A page whose browser says it is in Asia/Tokyo (whatever the machine's own zone is)."""
    context = await browser.new_context(base_url=service.base_url, timezone_id="Asia/Tokyo")
    page = await context.new_page()
    try:
        yield page
    finally:
        await context.close()


async def ask_my_time_zone(page: Page) -> tuple[dict[str, Any], str]:
    """Ask, wait for the reply to finish; the stream request's body and the reply's text."""
    streams = record_stream_requests(page)
    await page.goto("/")
    assert await page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone") == "Asia/Tokyo"
    await ask(page, "what is my time zone?")
    reply = page.locator(".message.assistant").first
    # no answer from the page would leave the run waiting for its tool, far longer than this
    await expect(reply).to_have_class(re.compile(r"\bdone\b"), timeout=WAIT_MS)
    await expect(page.locator("#input")).to_be_enabled()
    [stream] = streams
    return json.loads(stream.post_data or ""), await answer_text(reply)


async def test_the_page_answers_the_browser_time_zone_tool(tokyo_page: Page) -> None:
    page = tokyo_page
    tool_results = record_tool_results(page)

    body, reply = await ask_my_time_zone(page)

    # the page declared its tool, the model called it, the page answered, the reply says so
    assert body["events"] == "json"
    assert body["tools"] == [
        {
            "name": "get_browser_timezone",
            "description": "The time zone of the user's browser (IANA name).",
            "parameters": {"type": "object", "properties": {}},
        }
    ]
    assert "Your browser says your time zone is Asia/Tokyo." in reply
    await expect(page.locator(".tool-note")).to_have_text(
        "\U0001f9ed browser time zone: Asia/Tokyo"
    )
    await expect(page.locator(".tool-note.failed")).to_have_count(0)
    await expect(page.locator(".turn-error")).to_have_count(0)

    events = await chat_events(page)
    types = [event["type"] for event in events]
    assert "error" not in types
    assert types.count("done") == 1 and types[-1] == "done"
    assert events[-1]["data"]["finish_reason"] == "stop"
    [tool_call] = [event["data"] for event in events if event["type"] == "tool_call"]
    assert (tool_call["tool"], tool_call["arguments"]) == ("get_browser_timezone", {})
    [end] = [event["data"] for event in events if event["type"] == "tool_end"]
    assert (end["call_id"], end["status"]) == (tool_call["call_id"], "success")
    [record] = events[-1]["data"]["tool_calls"]
    assert (record["tool"], record["status"], record["result"]) == (
        "get_browser_timezone",
        "success",
        "Asia/Tokyo",
    )

    [answer] = tool_results
    assert answer.method == "POST"
    assert json.loads(answer.post_data or "") == {
        "call_id": tool_call["call_id"],
        "result": "Asia/Tokyo",
    }
    response = await answer.response()
    assert response is not None and response.status == 200
    assert await page.evaluate("window.__toolAnswers.map((a) => a.status)") == [200]


async def test_a_refused_tool_result_shows_its_error(tokyo_page: Page) -> None:
    page = tokyo_page

    async def deliver_then_refuse(route: Route) -> None:
        await route.fetch()  # the run gets its answer, so it does not wait for a timeout
        error = {"code": "internal_error", "message": "the proxy lost the answer"}
        await route.fulfill(status=502, json={"error": error})

    await page.route(f"**{TOOL_RESULT_PATH}", deliver_then_refuse)
    _, reply = await ask_my_time_zone(page)

    assert "Asia/Tokyo" in reply
    error = page.locator(".message.assistant .turn-error")
    await expect(error).to_be_visible()
    await expect(error).to_contain_text("tool result: HTTP 502 internal_error")
    await expect(error).to_contain_text("the proxy lost the answer")
    await expect(page.locator(".tool-note.failed")).to_contain_text("not delivered")


UNKNOWN_TOOL_STREAM = (
    'event: tool_start\ndata: {"tool": "open_camera", "call_id": "c1", "arguments": {}}\n\n'
    'event: tool_call\ndata: {"call_id": "c1", "tool": "open_camera", "arguments": {}}\n\n'
    'event: tool_end\ndata: {"tool": "open_camera", "call_id": "c1", "status": "error"}\n\n'
    'event: message\ndata: {"text": "No camera then."}\n\n'
    'event: done\ndata: {"finish_reason": "stop", "tool_calls": []}\n\n'
)


async def test_a_tool_the_page_does_not_run_is_answered_with_an_error(page: Page) -> None:
    answers: list[Any] = []

    async def refuse(route: Route) -> None:
        answers.append(json.loads(route.request.post_data or ""))
        await route.fulfill(status=200, json={"status": "delivered"})

    await page.route(
        "**/api/chat/stream",
        lambda route: route.fulfill(
            status=200, body=UNKNOWN_TOOL_STREAM.encode(), content_type="text/event-stream"
        ),
    )
    await page.route(f"**{TOOL_RESULT_PATH}", refuse)
    await page.goto("/")
    await ask(page, "take a picture")

    reply = page.locator(".message.assistant.done")
    await expect(reply.locator(".answer > .text")).to_have_text("No camera then.")
    await expect(page.locator(".tool-note")).to_contain_text("open_camera")
    # A function, not an expression: Playwright evaluates a function's text once, where the
    # page's CSP allows it, and an expression's again at every poll, which the CSP forbids
    # ('unsafe-eval'), so an expression false at its first look failed the test.
    await page.wait_for_function(
        "() => window.__toolAnswers.length === 1 && window.__toolAnswers[0].status === 200",
        timeout=WAIT_MS,
    )
    assert answers == [{"call_id": "c1", "error": "this page does not run open_camera"}]


# ---- the model's reasoning: folded above the answer ------------------------------------------

REASONING = ["The user greets me; ", "a short greeting back will do."]
ANSWER = ["Hello ", "there!"]


@pytest_asyncio.fixture(loop_scope="module")
async def reasoning_service(chromium: str) -> AsyncIterator[str]:
    """The app in this process, on a ScriptedModel that reasons (slowly enough to be seen
    streaming) before it answers; yields its base URL."""
    turn: list[ScriptItem] = [
        ModelChunk(reasoning=REASONING[0]),
        Pause(0.3),
        ModelChunk(reasoning=REASONING[1]),
        Pause(1.0),  # still thinking: the page says so
        ModelChunk(text=ANSWER[0]),
        Pause(0.3),
        ModelChunk(text=ANSWER[1]),
        ModelChunk(finish_reason="stop"),
    ]
    executor = AgentExecutor(model=ScriptedModel([turn]), metrics=CollectorRegistry())
    server = TestServer(create_app(executor), host="127.0.0.1")
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


@pytest.mark.parametrize("transport", ["fetch", "eventsource"])
async def test_reasoning_is_folded_above_the_answer(
    browser: Browser, reasoning_service: str, transport: str
) -> None:
    context = await browser.new_context(base_url=reasoning_service)
    try:
        page = await context.new_page()
        await page.goto("/")
        if transport == "eventsource":
            await page.locator("#use-eventsource").check()
        await ask(page, "hi")

        reply = page.locator(".message.assistant")
        details = reply.locator("details.reasoning")
        summary, thought = details.locator("summary"), details.locator(".reasoning-text")
        # while the model reasons: the block is there, says so, and stays folded
        await expect(summary).to_have_text("Thinking…", timeout=WAIT_MS)
        await expect(reply).not_to_have_class(re.compile(r"\bdone\b"))
        await expect(reply.locator(".answer > .text")).to_have_count(0)
        assert await details.evaluate("(el) => el.open") is False
        await expect(thought).to_be_hidden()

        await expect(reply).to_have_class(re.compile(r"\bdone\b"), timeout=WAIT_MS)
        await expect(summary).to_have_text("Thought")
        assert await details.evaluate("(el) => el.open") is False  # still folded
        await expect(details).to_have_count(1)
        # the block comes first in the bubble, the answer after it, and only the answer is
        # the answer
        assert await reply.evaluate("(el) => el.firstElementChild.tagName") == "DETAILS"
        answer = await answer_text(reply)
        assert answer == "".join(ANSWER)
        assert all(piece.strip() not in answer for piece in REASONING)
        assert await thought.text_content() == "".join(REASONING)

        await summary.click()  # unfolded on demand
        await expect(thought).to_be_visible()
        await expect(thought).to_have_text("".join(REASONING))
        await expect(page.locator(".turn-error")).to_have_count(0)
        await screenshot(page, f"reasoning-{transport}")

        events = await chat_events(page)
        assert [e["data"] for e in events if e["type"] == "reasoning"] == [
            {"text": piece} for piece in REASONING
        ]
        assert "".join(e["data"]["text"] for e in events if e["type"] == "message") == answer
        assert events[-1]["type"] == "done"
    finally:
        await context.close()
