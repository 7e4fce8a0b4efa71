"""Browser tests of the chat page doing what the API does (issue 19, item 4).

Playwright drives Debian's Chromium against the real service on 127.0.0.1: the API-key test
starts ``python -m server --api-keys-file`` on the demo model; the others serve the app in this
process, each on its own ``ScriptedModel`` (the model faked at the chunk level) and a fresh
metrics registry, so a test reads what the model was asked and what the service counted.
The fixtures and helpers come from ``tests/test_browser.py``; every test saves a screenshot
under ``tests/artifacts/screenshots/``.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from playwright.async_api import Browser, Page, Request, expect
from prometheus_client import CollectorRegistry

from agent_executor import AgentExecutor, tool
from agent_executor.messages import ToolMessage
from agent_executor.models.base import ModelChunk
from agent_executor.models.scripted import Pause, ScriptedModel, ScriptedTurn, call, tool_turn
from agent_executor.tools import Tool
from agent_executor.tools.ask_user import ASK_USER
from server import create_app
from tests.test_browser import (
    WAIT_MS,
    Service,
    answer_text,
    ask,
    record_stream_requests,
    run_service,
    screenshot,
)

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(60)]

DONE = re.compile(r"\bdone\b")
API_KEY = "sk-page-test-1"
API_KEY_STORAGE = "agent-executor.api_key"  # the sessionStorage key used by the page


@tool(requires_approval=True)
def refund(order_id: str, amount: float) -> str:
    """Refund an order (runs only once a person approves).

    Args:
        order_id: The order, e.g. "A-1".
        amount: How much to give back.
    """
    return f"refunded {amount:g} on {order_id}"


@tool
async def lookup(topic: str) -> dict[str, str]:
    """Look a topic up (takes a moment, so it has a duration to show)."""
    await asyncio.sleep(0.2)
    return {"topic": topic, "summary": "all good"}


@tool
def broken(topic: str) -> str:
    """A tool that always fails."""
    raise RuntimeError(f"no data on {topic}")


@dataclass
class App:
    """The app serving one test: its address, its scripted model and its metrics."""

    base_url: str
    model: ScriptedModel
    registry: CollectorRegistry


@asynccontextmanager
async def chat_page(
    browser: Browser, turns: Sequence[ScriptedTurn], tools: Sequence[Tool] = ()
) -> AsyncIterator[tuple[Page, App]]:
    """A page on a fresh app whose model plays ``turns`` (all of them, the test ends checking)."""
    model, registry = ScriptedModel(turns), CollectorRegistry()
    executor = AgentExecutor(model=model, tools=list(tools), metrics=registry)
    server = TestServer(create_app(executor), host="127.0.0.1")
    await server.start_server()
    context = await browser.new_context(base_url=str(server.make_url("")).rstrip("/"))
    try:
        page = await context.new_page()
        yield page, App(str(server.make_url("")), model, registry)
        assert model.remaining == 0, "the scripted model was not asked for every turn"
    finally:
        await context.close()
        await server.close()


def bodies(requests: list[Request]) -> list[dict[str, Any]]:
    return [json.loads(request.post_data or "") for request in requests]


def tool_results(model: ScriptedModel) -> list[tuple[str, str]]:
    """(call id, content) of the tool results in the model's last request."""
    return [
        (message.tool_call_id, message.content)
        for message in model.requests[-1].messages
        if isinstance(message, ToolMessage)
    ]


# ---- the API key ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keyed_service(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The real service, started with an API-keys file (one user), on the demo model."""
    folder = tmp_path_factory.mktemp("keyed")
    keys = folder / "api-keys"
    keys.write_text(f"# user_id=key\nalice={API_KEY}\n")
    with run_service(folder / "service.log", "--model", "demo", "--api-keys-file", str(keys)) as s:
        yield s


async def test_the_api_key_is_asked_for_kept_in_the_tab_and_sent(
    browser: Browser,
    keyed_service: Service,
) -> None:
    context = await browser.new_context(base_url=keyed_service.base_url)
    try:
        page = await context.new_page()
        streams, results = record_stream_requests(page), record_requests(page, "tool-result")
        await page.goto("/")  # the page and its scripts load without a key
        key_box = page.locator("#api-key")

        # without a key: the 401 says what to do, in the transcript
        await ask(page, "hello")
        refused = page.locator(".message.assistant").first
        await expect(refused.locator(".turn-error")).to_contain_text("HTTP 401", timeout=WAIT_MS)
        await expect(refused.locator(".turn-error")).to_contain_text("needs an API key")
        await expect(key_box).to_have_attribute("aria-invalid", "true")
        await screenshot(page, "api-key-missing")

        # a wrong key is refused too, with its own message
        await key_box.fill("sk-wrong")
        await ask(page, "hello")
        wrong = page.locator(".message.assistant").nth(1)
        await expect(wrong.locator(".turn-error")).to_contain_text("did not accept this API key")

        # with the key: the answer comes, and the key outlives a reload (this tab only)
        await key_box.fill(API_KEY)
        await expect(key_box).not_to_have_attribute("aria-invalid", "true")
        await page.reload()
        await expect(key_box).to_have_value(API_KEY)
        assert await page.evaluate(f"sessionStorage.getItem('{API_KEY_STORAGE}')") == API_KEY
        await ask(page, "what is my time zone?")  # the page answers a tool call: with the key
        reply = page.locator(".message.assistant").first
        await expect(reply).to_have_class(DONE, timeout=WAIT_MS)
        await expect(reply.locator(".turn-error")).to_have_count(0)
        assert "your time zone is" in await answer_text(reply)
        await screenshot(page, "api-key-accepted")

        headers = [await request.all_headers() for request in [*streams, *results]]
        assert [h.get("authorization") for h in headers] == [
            None,
            "Bearer sk-wrong",
            f"Bearer {API_KEY}",
            f"Bearer {API_KEY}",
        ]
        response = await results[0].response()
        assert response is not None and response.status == 200

        # an EventSource cannot carry the key: the page says so instead of sending a request
        await page.locator("#use-eventsource").check()
        await ask(page, "hello again")
        refusal = page.locator(".message.assistant").nth(1).locator(".turn-error")
        await expect(refusal).to_contain_text("cannot send the API key")
        assert len(streams) == 3
    finally:
        await context.close()


def record_requests(page: Page, endpoint: str) -> list[Request]:
    """Every request the page makes to ``/api/chat/<endpoint>``."""
    seen: list[Request] = []
    page.on(
        "request",
        lambda request: (
            seen.append(request) if request.url.endswith(f"/api/chat/{endpoint}") else None
        ),
    )
    return seen


# ---- approvals and ask_user -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("decision", "status", "result"),
    [
        ("Approve", "success", "refunded 20 on A-1"),
        ("Decline", "rejected", "the user did not approve this call"),
    ],
)
async def test_a_call_needing_approval_waits_for_the_buttons_and_resumes(
    browser: Browser,
    decision: str,
    status: str,
    result: str,
) -> None:
    turns: list[ScriptedTurn] = [
        tool_turn(call("refund", {"order_id": "A-1", "amount": 20}, id="c7"), text="On it. "),
        "Done: **settled**.",
    ]
    async with chat_page(browser, turns, [refund]) as (page, app):
        streams = record_stream_requests(page)
        await page.goto("/")
        await ask(page, "refund order A-1")

        reply = page.locator(".message.assistant")
        card = reply.locator(".approval[data-tool=refund]")
        await expect(card).to_be_visible(timeout=WAIT_MS)
        await expect(card).to_contain_text("The assistant wants to run refund with:")
        await expect(card.locator("pre")).to_have_text('{\n  "order_id": "A-1",\n  "amount": 20\n}')
        await expect(reply).to_have_class(re.compile(r"\bwaiting\b"), timeout=WAIT_MS)
        await expect(page.locator("#input")).to_be_enabled()  # the stream is over: paused
        await screenshot(page, "approval-pending")
        assert len(streams) == 1

        await card.get_by_role("button", name=decision).click()
        await expect(reply).to_have_class(DONE, timeout=WAIT_MS)
        await expect(card).to_have_attribute("data-state", f"{decision.lower()}d")
        await expect(card.locator(".outcome")).to_have_text(f"{decision}d")
        await expect(card.locator("button:disabled")).to_have_count(2)  # kept, folded away
        record = reply.locator("details.tool-call[data-tool=refund]")
        await expect(record).to_have_attribute("data-status", status)
        await expect(reply.locator(".answer strong")).to_have_text("settled")
        assert await answer_text(reply) == "On it. Done: settled."
        await screenshot(page, f"approval-{decision.lower()}d")

        first, resume = bodies(streams)
        token = next(
            e["data"]["approval_token"]
            for e in await page.evaluate("window.__chatEvents")
            if e["type"] == "approval_required"
        )
        assert resume == {
            "session_id": first["session_id"],
            "events": "json",
            "tools": first["tools"],
            "approvals": [
                {"call_id": "c7", "approved": decision == "Approve", "approval_token": token}
            ],
        }
        assert tool_results(app.model) == [("c7", result)]


async def test_ask_user_shows_the_question_and_sends_the_answer(browser: Browser) -> None:
    turns: list[ScriptedTurn] = [
        tool_turn(call("ask_user", {"question": "Which colour should it be?"}, id="q1")),
        "Blue it is.",
    ]
    async with chat_page(browser, turns, [ASK_USER]) as (page, app):
        streams = record_stream_requests(page)
        await page.goto("/")
        await ask(page, "paint the fence")

        card = page.locator(".approval.ask")
        await expect(card.locator(".question")).to_have_text(
            "Which colour should it be?", timeout=WAIT_MS
        )
        answer = card.get_by_role("textbox", name="Your answer")
        await expect(answer).to_be_focused()  # the page hands the person the question
        await card.get_by_role("button", name="Answer").click()  # an empty answer is not sent
        await expect(card).to_have_attribute("data-state", "pending")
        await answer.fill("blue")
        await screenshot(page, "ask-user-pending")
        await answer.press("Enter")

        reply = page.locator(".message.assistant")
        await expect(reply).to_have_class(DONE, timeout=WAIT_MS)
        await expect(card.locator(".outcome")).to_have_text("You answered: blue")
        assert await answer_text(reply) == "Blue it is."
        await screenshot(page, "ask-user-answered")
        assert bodies(streams)[1]["approvals"] == [
            {
                "call_id": "q1",
                "approved": True,
                "answer": "blue",
                "approval_token": await page.evaluate("window.__chatEvents[0].data.approval_token"),
            }
        ]
        assert tool_results(app.model) == [("q1", "blue")]


async def test_two_pending_calls_are_sent_back_together_once_both_are_decided(
    browser: Browser,
) -> None:
    turns: list[ScriptedTurn] = [
        tool_turn(
            call("refund", {"order_id": "B-2", "amount": 5}, id="c1"),
            call("ask_user", {"question": "Why?"}, id="q1"),
        ),
        "Refund refused; noted why.",
    ]
    async with chat_page(browser, turns, [refund, ASK_USER]) as (page, app):
        streams = record_stream_requests(page)
        await page.goto("/")
        await ask(page, "refund B-2")

        cards = page.locator(".approval")
        await expect(cards).to_have_count(2, timeout=WAIT_MS)
        await expect(page.locator(".message.assistant")).to_have_class(re.compile("waiting"))
        await cards.first.get_by_role("button", name="Decline").click()
        await expect(cards.first).to_have_attribute("data-state", "declined")
        await cards.nth(1).get_by_role("textbox").fill("it arrived broken")
        await cards.nth(1).get_by_role("button", name="Answer").click()

        await expect(page.locator(".message.assistant")).to_have_class(DONE, timeout=WAIT_MS)
        await screenshot(page, "approval-two-calls")
        # one resume, carrying both decisions (the service needs every pending call decided)
        assert len(streams) == 2
        decisions = bodies(streams)[1]["approvals"]
        assert [(d["call_id"], d["approved"], d.get("answer")) for d in decisions] == [
            ("c1", False, None),
            ("q1", True, "it arrived broken"),
        ]
        assert tool_results(app.model) == [
            ("c1", "the user did not approve this call"),
            ("q1", "it arrived broken"),
        ]


async def test_a_new_message_instead_of_a_decision_drops_the_paused_call(
    browser: Browser,
) -> None:
    turns: list[ScriptedTurn] = [
        tool_turn(call("refund", {"order_id": "C-3", "amount": 1}, id="c9")),
        "Forgot about the refund.",
    ]
    async with chat_page(browser, turns, [refund]) as (page, app):
        streams = record_stream_requests(page)
        await page.goto("/")
        await ask(page, "refund C-3")
        card = page.locator(".approval")
        await expect(card).to_have_attribute("data-state", "pending", timeout=WAIT_MS)

        await ask(page, "never mind")
        await expect(page.locator(".message.assistant").nth(1)).to_have_class(DONE, timeout=WAIT_MS)
        await expect(card).to_have_attribute("data-state", "dropped")
        await expect(card.locator(".outcome")).to_have_text(
            "Not decided: a new message was sent instead."
        )
        await expect(card.locator("button:enabled")).to_have_count(0)
        await screenshot(page, "approval-dropped")
        assert [body.get("message") for body in bodies(streams)] == ["refund C-3", "never mind"]
        assert tool_results(app.model) == []  # the service dropped the paused run


# ---- tool records, errors ----------------------------------------------------------------------


async def test_each_tool_call_leaves_a_folded_record_that_stays(browser: Browser) -> None:
    turns: list[ScriptedTurn] = [
        tool_turn(
            call("lookup", {"topic": "tides"}, id="t1"),
            call("broken", {"topic": "tides"}, id="t2"),
            text="Checking. ",
        ),
        "Tides are fine.",
        "Hello again.",
    ]
    async with chat_page(browser, turns, [lookup, broken]) as (page, _):
        await page.goto("/")
        await ask(page, "how are the tides?")
        reply = page.locator(".message.assistant").first
        await expect(reply).to_have_class(DONE, timeout=WAIT_MS)

        good = reply.locator("details.tool-call[data-call-id=t1]")
        bad = reply.locator("details.tool-call[data-call-id=t2]")
        await expect(good.locator("summary")).to_have_text(re.compile(r"^lookup success · \d+ ms$"))
        await expect(bad).to_have_attribute("data-status", "error")
        await expect(bad).to_have_class(re.compile(r"\bfailed\b"))
        assert await good.evaluate("(el) => el.open") is False  # folded until asked
        await good.locator("summary").click()
        await expect(good.locator(".tool-arguments")).to_have_text('{\n  "topic": "tides"\n}')
        await expect(good.locator(".tool-status")).to_have_text("success")
        await expect(good.locator(".tool-duration")).to_have_text(re.compile(r"^\d+ ms$"))
        await expect(good.locator(".tool-result")).to_contain_text('"summary": "all good"')
        # in the order it happened: the text, the two calls, then the answer
        order = await reply.evaluate(
            "(el) => [...el.querySelector('.answer').children].map((c) => c.className)"
        )
        assert order == ["text", "tool-call", "tool-call failed", "text"]

        await ask(page, "hi")
        await expect(page.locator(".message.assistant").nth(1)).to_have_class(DONE)
        await expect(page.locator("details.tool-call")).to_have_count(2)  # still there
        await screenshot(page, "tool-records")


async def test_a_failed_reply_keeps_its_text_and_error_after_the_next_message(
    browser: Browser,
) -> None:
    turns: list[ScriptedTurn] = [
        [ModelChunk(text="Partly "), ModelChunk(text="there"), RuntimeError("provider fell over")],
        "All good now.",
    ]
    async with chat_page(browser, turns) as (page, _):
        await page.goto("/")
        await ask(page, "first")
        failed = page.locator(".message.assistant").first
        await expect(failed).to_have_class(re.compile(r"\bfailed\b"), timeout=WAIT_MS)
        await expect(failed).to_have_class(DONE)

        await ask(page, "second")
        answered = page.locator(".message.assistant").nth(1)
        await expect(answered).to_have_class(DONE, timeout=WAIT_MS)
        assert await answer_text(answered) == "All good now."
        assert await answer_text(failed) == "Partly there"
        await expect(failed.locator(".turn-error")).to_have_count(1)
        await expect(failed.locator(".turn-error .code")).not_to_have_text("")
        await expect(answered.locator(".turn-error")).to_have_count(0)
        await screenshot(page, "failed-reply-kept")


# ---- Stop ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["fetch", "eventsource"])
async def test_stop_closes_the_stream_and_the_service_cancels_the_run(
    browser: Browser,
    transport: str,
) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    @tool
    async def survey(region: str) -> str:
        """A survey that takes far longer than anyone waits."""
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    turns: list[ScriptedTurn] = [
        tool_turn(call("survey", {"region": "north"}, id="s1"), text="Surveying. "),
        "Still here.",
    ]
    async with chat_page(browser, turns, [survey]) as (page, app):
        await page.goto("/")
        if transport == "eventsource":
            await page.locator("#use-eventsource").check()
        await ask(page, "survey the north")
        await asyncio.wait_for(started.wait(), WAIT_MS / 1000)
        stop = page.locator("#stop")
        await expect(stop).to_be_visible()
        await expect(page.locator("#send")).to_be_hidden()
        await stop.click()

        await asyncio.wait_for(cancelled.wait(), WAIT_MS / 1000)  # the tool saw the run end
        await wait_for_sample(
            app.registry, "agent_executor_requests_total", 1.0, outcome="cancelled"
        )
        reply = page.locator(".message.assistant").first
        await expect(reply).to_have_class(re.compile(r"\bstopped\b"))
        await expect(reply.locator(".turn-note.stopped")).to_have_text(
            "Stopped: the run was cancelled."
        )
        await expect(reply.locator("details.tool-call")).to_have_attribute("data-status", "stopped")
        assert await answer_text(reply) == "Surveying."
        await expect(stop).to_be_hidden()
        await screenshot(page, f"stopped-{transport}")

        await ask(page, "are you there?")  # the page goes on as before
        await expect(page.locator(".message.assistant").nth(1)).to_have_class(DONE, timeout=WAIT_MS)


@pytest.mark.parametrize("transport", ["fetch", "eventsource"])
async def test_a_reload_mid_answer_shows_the_rest_of_the_same_run(
    browser: Browser,
    transport: str,
) -> None:
    started, gate, runs = asyncio.Event(), asyncio.Event(), []

    @tool
    async def survey(region: str) -> str:
        """A survey that waits for the test."""
        runs.append(region)
        started.set()
        await gate.wait()
        return f"{region}: all calm"

    turns: list[ScriptedTurn] = [
        tool_turn(call("survey", {"region": "north"}, id="s1"), text="Surveying. "),
        "The north is calm.",
    ]
    async with chat_page(browser, turns, [survey]) as (page, app):
        await page.goto("/")
        if transport == "eventsource":
            await page.locator("#use-eventsource").check()
        await ask(page, "survey the north")
        await asyncio.wait_for(started.wait(), WAIT_MS / 1000)
        await expect(page.locator(".message.assistant").first).to_contain_text("Surveying")
        await page.reload()  # the connection goes with the page; the run goes on
        gate.set()

        reply = page.locator(".message.assistant").first
        await expect(reply).to_have_class(DONE, timeout=WAIT_MS)
        await expect(page.locator(".message.user").first).to_have_text("survey the north")
        assert await answer_text(reply) == "Surveying. The north is calm."
        await screenshot(page, f"reloaded-{transport}")

    assert runs == ["north"]  # nothing ran twice
    assert len(app.model.requests) == 2
    assert (
        app.registry.get_sample_value(
            "agent_executor_requests_total", {"mode": "stream", "outcome": "success"}
        )
        == 1.0
    )


async def wait_for_sample(
    registry: CollectorRegistry, name: str, value: float, **labels: str
) -> None:
    """Wait (briefly) until the service has recorded the run's outcome: it does so as the run's
    task unwinds, just after the tool saw the cancellation."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while registry.get_sample_value(name, {"mode": "stream", **labels}) != value:
        assert time.monotonic() < deadline, f"{name}{labels} never reached {value}"
        await asyncio.sleep(0.02)


# ---- Markdown, safely ---------------------------------------------------------------------------

MARKDOWN = (
    "Here is **bold** and `code`.\n\n"
    "- one\n- two\n\n"
    '<img src=x onerror="window.__xss=1">\n\n'
    "[click me](javascript:window.__xss=2) and [docs](https://example.org/a?b=1)\n\n"
    '<script>window.__xss=3</script><a href="#" onclick="window.__xss=4">raw link</a>\n\n'
    "![pic](javascript:window.__xss=5)"
)


def pieces(text: str, size: int = 5) -> list[ModelChunk]:
    """``text`` in chunks of ``size`` characters, cut wherever that falls (mid-token too)."""
    return [ModelChunk(text=text[i : i + size]) for i in range(0, len(text), size)]


EVERY_HANDLER = """() => [...document.querySelectorAll('*')].flatMap((el) => [...el.attributes]
  .filter((a) => a.name.startsWith('on')).map((a) => `${el.tagName} ${a.name}`))"""


async def test_markdown_is_rendered_as_it_streams_and_model_html_is_neutralised(
    browser: Browser,
) -> None:
    half = MARKDOWN.index("<img")
    turn = [
        *pieces(MARKDOWN[:half]),
        Pause(0.8),  # the first half is on the page, rendered, before the rest arrives
        *pieces(MARKDOWN[half:]),
        ModelChunk(finish_reason="stop"),
    ]
    async with chat_page(browser, [turn]) as (page, _):
        await page.goto("/")
        await ask(page, "show me markdown")
        reply = page.locator(".message.assistant").first
        answer = reply.locator(".answer")

        await expect(answer.locator("strong")).to_have_text("bold", timeout=WAIT_MS)
        await expect(reply).not_to_have_class(DONE)  # rendered while it streams
        await expect(answer.locator("li")).to_have_text(["one", "two"])
        await expect(reply).to_have_class(DONE, timeout=WAIT_MS)
        await expect(answer.locator("code")).to_have_text("code")

        # the model's raw HTML is shown as text, never run
        text = await answer_text(reply)
        assert text.startswith('Here is bold and code. one two <img src=x onerror="window')
        assert "<script>window.__xss=3</script>" in text
        assert await answer.locator("script, [onerror], [onclick]").count() == 0
        assert await page.evaluate(EVERY_HANDLER) == []
        # the Markdown image keeps its alt text and loses its javascript: source
        picture = answer.locator("img")
        await expect(picture).to_have_attribute("alt", "pic")
        assert await picture.get_attribute("src") is None
        # a javascript: link keeps its text and loses its target; a web link opens elsewhere
        click_me = answer.get_by_text("click me")
        assert await click_me.get_attribute("href") is None
        await click_me.click()
        docs = answer.get_by_role("link", name="docs")
        await expect(docs).to_have_attribute("href", "https://example.org/a?b=1")
        await expect(docs).to_have_attribute("target", "_blank")
        await expect(docs).to_have_attribute("rel", "noopener noreferrer nofollow")
        assert await page.evaluate("window.__xss") is None
        await screenshot(page, "markdown-and-xss")


async def test_the_vendored_libraries_are_served_and_load(browser: Browser) -> None:
    async with chat_page(browser, []) as (page, _):
        await page.goto("/")
        versions = await page.evaluate(
            "() => [typeof window.marked.Marked, window.DOMPurify.version]"
        )
        assert versions == ["function", vendored_version("purify.min.js")]


def vendored_version(name: str) -> str:
    """The version a vendored file says in its header comment."""
    head = (Path(__file__).parent.parent / "server" / "static" / "vendor" / name).read_text()[:300]
    match = re.search(r"(\d+\.\d+\.\d+)", head)
    assert match
    return match.group(1)
