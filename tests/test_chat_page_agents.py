"""Browser tests of the chat page showing which agent speaks (issue 20, item 6) and picking
the agent that answers (issue 30, item 5).

Playwright drives Debian's Chromium against the app served in this process on 127.0.0.1, its
agents on ``ScriptedModel``s: an agent used as a tool (``as_tool()``) streams ``nested`` events,
which the page shows inside that call's record (and answers its client tools' calls from
there); a router's pick and a handoff (``handoff()``) stream ``agent_selected``, which the page
shows as the reply's speaker and a divider. The agent picker is filled from ``GET v1/models``
(with the API key when the service has keys), ``?agent=NAME`` preselects, and the choice goes
with every chat request. Every test saves a screenshot under ``tests/artifacts/screenshots/``.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from urllib.parse import parse_qs, urlsplit

import pytest
from aiohttp.test_utils import TestServer
from playwright.async_api import Browser, Locator, Page, expect
from prometheus_client import CollectorRegistry

from agent_executor import AgentExecutor, AgentGroup, AgentRouter, ScriptedModel, handoff, tool
from agent_executor.models.scripted import ScriptedTurn, call, tool_turn
from server import Settings, create_app
from tests.test_browser import (
    WAIT_MS,
    answer_text,
    ask,
    chat_events,
    record_stream_requests,
    screenshot,
    words,
)

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(60)]

DONE = re.compile(r"\bdone\b")

EVERY_HANDLER = """() => [...document.querySelectorAll('*')].flatMap((el) => [...el.attributes]
  .filter((a) => a.name.startsWith('on')).map((a) => `${el.tagName} ${a.name}`))"""


def agent(name: str, turns: list[ScriptedTurn], **options: object) -> AgentExecutor:
    return AgentExecutor(
        model=ScriptedModel(turns), name=name, metrics=CollectorRegistry(), **options
    )  # type: ignore[arg-type]


@asynccontextmanager
async def chat_page(
    browser: Browser,
    agents: AgentExecutor | AgentRouter | Mapping[str, AgentExecutor],
    *models: ScriptedModel,
    settings: Settings | None = None,
) -> AsyncIterator[Page]:
    """A page on a fresh app serving ``agents``; every model in ``models`` played all its turns."""
    server = TestServer(create_app(agents, settings), host="127.0.0.1")
    await server.start_server()
    context = await browser.new_context(base_url=str(server.make_url("")).rstrip("/"))
    try:
        yield await context.new_page()
        for model in models:
            assert model.remaining == 0, "a scripted model was not asked for every turn"
    finally:
        await context.close()
        await server.close()


async def answered(page: Page, message: str) -> Locator:
    """Open the page, send ``message`` and wait for the reply to finish; the reply."""
    await page.goto("/")
    await ask(page, message)
    reply = page.locator(".message.assistant").first
    await expect(reply).to_have_class(DONE, timeout=WAIT_MS)
    return reply


def model_of(executor: AgentExecutor) -> ScriptedModel:
    model = executor.model
    assert isinstance(model, ScriptedModel)
    return model


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"{topic}: 2.1 million people"


async def run_text(run: Locator) -> str:
    """The text of a nested run (its own blocks, not those of runs nested in it)."""
    return words(
        await run.evaluate(
            "(r) => [...r.querySelector(':scope > .run-flow').children]"
            ".filter((c) => c.classList.contains('text')).map((c) => c.textContent).join(' ')"
        )
    )


@pytest.mark.parametrize("transport", ["fetch", "eventsource"])
async def test_an_agent_used_as_a_tool_speaks_inside_its_call_record(
    browser: Browser, transport: str
) -> None:
    fact_checker = agent("fact_checker", ["Confirmed: **2.1 million**."])
    researcher = agent(
        "researcher",
        [
            tool_turn(call("lookup", {"topic": "Paris"}, id="r1"), text="Let me look. "),
            tool_turn(call("fact_checker", {"input": "Is it 2.1 million?"}, id="r2")),
            "Paris has about *2.1 million* people.",
        ],
        tools=[lookup, fact_checker.as_tool()],
    )
    writer = agent(
        "writer",
        [
            tool_turn(call("researcher", {"input": "How many people live in Paris?"}, id="w1")),
            "Paris is home to some 2.1 million people.",
        ],
        tools=[researcher.as_tool()],
    )
    models = [model_of(a) for a in (writer, researcher, fact_checker)]
    async with chat_page(browser, writer, *models) as page:
        await page.goto("/")
        if transport == "eventsource":  # a GET in json mode: nested events come too
            await page.locator("#use-eventsource").check()
        await ask(page, "Write about Paris.")
        reply = page.locator(".message.assistant").first
        await expect(reply).to_have_class(DONE, timeout=WAIT_MS)

        # the caller's answer is its own text only
        assert await answer_text(reply) == "Paris is home to some 2.1 million people."
        record = reply.locator(".answer > details.tool-call[data-call-id=w1]")
        await expect(record.locator("> summary")).to_have_text(
            re.compile(r"^researcher \(agent\) success · ")
        )
        await expect(record).to_have_class(re.compile(r"\bagent-call\b"))
        assert await record.evaluate("(el) => el.open") is False  # folded like any call
        await record.locator("> summary").click()

        run = record.locator(".tool-run > .nested-run").first
        await expect(run.locator("> .speaker")).to_have_text("researcher")
        assert await run_text(run) == "Let me look. Paris has about 2.1 million people."
        await expect(run.locator("> .run-flow > .text em")).to_have_text("2.1 million")
        # its own tool calls are records in its run, and an agent it calls nests one level down
        inner = run.locator("> .run-flow > details.tool-call")
        await expect(inner).to_have_count(2)
        await expect(inner.nth(0).locator("> summary")).to_have_text(re.compile(r"^lookup success"))
        await expect(inner.nth(1).locator("> summary")).to_have_text(
            re.compile(r"^fact_checker \(agent\) success")
        )
        await inner.nth(0).locator("> summary").click()
        await expect(inner.nth(0).locator(".tool-result")).to_contain_text("2.1 million people")
        await inner.nth(1).locator("> summary").click()
        deeper = inner.nth(1).locator(".nested-run")
        await expect(deeper.locator("> .speaker")).to_have_text("fact_checker")
        await expect(deeper.locator("strong")).to_have_text("2.1 million")
        # the result the caller got is in the record, after the run
        await expect(record.locator("> dl > .tool-result")).to_contain_text(
            "Paris has about *2.1 million* people."
        )
        kinds = [event["type"] for event in await chat_events(page)]
        assert "nested" in kinds
        await screenshot(page, f"agent-as-tool-{transport}")


async def test_a_handoff_shows_where_the_next_agent_takes_over(browser: Browser) -> None:
    billing = agent(
        "billing",
        ["Invoice 42 was **paid** on 3 March."],
        description="Invoices, payments and refunds.",
    )
    triage = agent(
        "triage",
        [tool_turn(call("transfer_to_billing", id="h1"), text="Let me pass you to billing. ")],
        tools=[handoff(billing)],
    )
    router = AgentRouter([triage, billing], router=lambda message, agents: "triage")
    async with chat_page(browser, router, model_of(triage), model_of(billing)) as page:
        reply = await answered(page, "Was invoice 42 paid?")

        await expect(reply).to_have_attribute("data-speaker", "triage → billing")
        await expect(reply).to_have_attribute("data-agent", "billing")
        divider = reply.locator(".answer > .handoff")
        await expect(divider).to_have_count(1)
        await expect(divider).to_have_text("→ billing (from triage)")
        await expect(divider).to_have_attribute("data-agent", "billing")
        # in the order it happened: triage's text, its handoff call, the divider, billing's text
        order = await reply.evaluate(
            "(el) => [...el.querySelector('.answer').children]"
            ".map((c) => `${c.className}:${c.dataset.agent ?? ''}`)"
        )
        assert order == ["text:triage", "tool-call:", "handoff:billing", "text:billing"]
        assert await answer_text(reply) == (
            "Let me pass you to billing. Invoice 42 was paid on 3 March."
        )
        await screenshot(page, "handoff")


async def test_a_reply_names_the_agent_the_router_picked(browser: Browser) -> None:
    weather = agent("weather", ["Sunny."])
    billing = agent("billing", [])
    router = AgentRouter([billing, weather], router=lambda message, agents: "weather")
    async with chat_page(browser, router, model_of(weather)) as page:
        reply = await answered(page, "Weather?")
        await expect(reply).to_have_attribute("data-speaker", "weather")
        await expect(reply.locator(".handoff")).to_have_count(0)
        assert await answer_text(reply) == "Sunny."


async def test_a_plain_agent_still_reads_assistant(browser: Browser) -> None:
    only = agent("solo", ["Hi."])
    async with chat_page(browser, only, model_of(only)) as page:
        reply = await answered(page, "hello")
        await expect(reply).to_have_attribute("data-speaker", "Assistant")


XSS = (
    'Found it. <img src=x onerror="window.__xss=1"> '
    "[click](javascript:window.__xss=2) <script>window.__xss=3</script>"
)


async def test_a_nested_agents_html_is_shown_as_text_never_run(browser: Browser) -> None:
    researcher = agent("researcher", [XSS])
    writer = agent(
        "writer",
        [tool_turn(call("researcher", {"input": "look"}, id="w1")), "Done."],
        tools=[researcher.as_tool()],
    )
    async with chat_page(browser, writer, model_of(writer), model_of(researcher)) as page:
        reply = await answered(page, "go")
        record = reply.locator("details.tool-call[data-call-id=w1]")
        await record.locator("> summary").click()
        run = record.locator(".nested-run")
        text = await run_text(run)
        assert text.startswith('Found it. <img src=x onerror="window.__xss=1">')
        assert "<script>window.__xss=3</script>" in text
        assert await run.locator("img, script, [onerror]").count() == 0
        assert await run.get_by_text("click").get_attribute("href") is None
        assert await page.evaluate(EVERY_HANDLER) == []
        assert await page.evaluate("window.__xss") is None
        assert await answer_text(reply) == "Done."
        await screenshot(page, "agent-as-tool-xss")


async def test_a_failing_nested_agent_shows_its_error_in_the_record(browser: Browser) -> None:
    researcher = agent("researcher", [[RuntimeError("provider fell over")]])
    writer = agent(
        "writer",
        [tool_turn(call("researcher", {"input": "look"}, id="w1")), "It failed, sorry."],
        tools=[researcher.as_tool()],
    )
    async with chat_page(browser, writer, model_of(writer), model_of(researcher)) as page:
        reply = await answered(page, "go")
        record = reply.locator("details.tool-call[data-call-id=w1]")
        await expect(record).to_have_attribute("data-status", "error")
        await record.locator("> summary").click()
        run = record.locator(".nested-run")
        await expect(run).to_have_class(re.compile(r"\bfailed\b"))
        await expect(run.locator(".turn-error .code")).to_have_text(re.compile(r"^\w+_error$"))
        # the caller's bubble is not the one that failed
        await expect(reply).not_to_have_class(re.compile(r"\bfailed\b"))
        await expect(reply.locator(".answer > .turn-error")).to_have_count(0)
        assert await answer_text(reply) == "It failed, sorry."


async def test_a_groups_reply_shows_each_rounds_agent(browser: Browser) -> None:
    writer = agent("writer", ["Cats sleep a lot."])
    editor = agent("editor", ["Cats sleep **sixteen** hours a day."])
    team = AgentGroup([writer, editor], name="team", metrics=CollectorRegistry())
    async with chat_page(browser, team, model_of(writer), model_of(editor)) as page:
        reply = await answered(page, "Write about cats.")

        await expect(reply).to_have_attribute("data-speaker", "writer → editor")
        divider = reply.locator(".answer > .handoff")
        await expect(divider).to_have_count(1)
        await expect(divider).to_have_text("→ editor (round 2 of 5: next in order)")
        order = await reply.evaluate(
            "(el) => [...el.querySelector('.answer').children]"
            ".map((c) => `${c.className}:${c.dataset.agent ?? ''}`)"
        )
        assert order == ["text:writer", "handoff:editor", "text:editor"]
        assert await answer_text(reply) == "Cats sleep a lot. Cats sleep sixteen hours a day."
        await screenshot(page, "group")


# ---- the agent picker (issue 30, item 5) ------------------------------------------------------


def team_of_three() -> tuple[dict[str, AgentExecutor], dict[str, ScriptedModel]]:
    """Two agents and a group of them, by name; each agent answers once with its name."""
    weather = agent("weather", ["Weather here."])
    billing = agent("billing", ["Billing here."])
    writer = agent("writer", ["The team wrote this."])
    team = AgentGroup([writer], name="team", metrics=CollectorRegistry())
    served = {"weather": weather, "billing": billing, "team": team}
    return served, {name: model_of(a) for name, a in (("weather", weather), ("billing", billing))}


async def options(page: Page) -> list[tuple[str, str]]:
    """The picker's options: (value, label)."""
    found: list[list[str]] = await page.eval_on_selector_all(
        "#agent option", "(os) => os.map((o) => [o.value, o.textContent])"
    )
    return [(value, label) for value, label in found]


async def test_the_picker_lists_the_agents_and_the_chosen_one_answers(browser: Browser) -> None:
    served, models = team_of_three()
    async with chat_page(browser, served, *models.values()) as page:
        streams = record_stream_requests(page)
        await page.goto("/")
        picker = page.locator("#agent")
        await expect(picker).to_have_attribute("data-state", "listed", timeout=WAIT_MS)
        assert await options(page) == [
            ("", "default"),
            ("billing", "billing"),
            ("team", "team"),
            ("weather", "weather"),
        ]
        await expect(picker).to_have_value("")

        await picker.select_option("billing")
        assert parse_qs(urlsplit(page.url).query) == {"agent": ["billing"]}  # kept on reload
        await ask(page, "Was invoice 42 paid?")
        reply = page.locator(".message.assistant").first
        await expect(reply).to_have_class(DONE, timeout=WAIT_MS)
        assert await answer_text(reply) == "Billing here."
        await screenshot(page, "agent-picker")

        await picker.select_option("")  # the service's default: no agent named
        assert urlsplit(page.url).query == ""
        await ask(page, "And the weather?")
        second = page.locator(".message.assistant").nth(1)
        await expect(second).to_have_class(DONE, timeout=WAIT_MS)
        assert await answer_text(second) == "Weather here."

    bodies = [json.loads(request.post_data or "{}") for request in streams]
    assert [body.get("agent") for body in bodies] == ["billing", None]


@pytest.mark.parametrize("transport", ["fetch", "eventsource"])
async def test_agent_in_the_address_preselects_it(browser: Browser, transport: str) -> None:
    served, _ = team_of_three()
    async with chat_page(browser, served) as page:
        streams = record_stream_requests(page)
        await page.goto("/?agent=team")
        await expect(page.locator("#agent")).to_have_value("team")
        await expect(page.locator("#agent")).to_have_attribute("data-state", "listed")
        if transport == "eventsource":
            await page.locator("#use-eventsource").check()
        await ask(page, "Write something.")
        reply = page.locator(".message.assistant").first
        await expect(reply).to_have_class(DONE, timeout=WAIT_MS)
        assert await answer_text(reply) == "The team wrote this."

    [request] = streams
    if transport == "eventsource":
        assert parse_qs(urlsplit(request.url).query)["agent"] == ["team"]
    else:
        assert json.loads(request.post_data or "{}")["agent"] == "team"


async def test_an_agent_the_service_does_not_list_is_kept_and_refused_plainly(
    browser: Browser,
) -> None:
    served, _ = team_of_three()
    async with chat_page(browser, served) as page:
        await page.goto("/?agent=nope")
        picker = page.locator("#agent")
        await expect(picker).to_have_attribute("data-state", "listed", timeout=WAIT_MS)
        await expect(picker).to_have_value("nope")
        assert ("nope", "nope (not listed)") in await options(page)
        await ask(page, "hello")
        error = page.locator(".message.assistant").first.locator(".turn-error")
        await expect(error).to_contain_text("HTTP 400", timeout=WAIT_MS)
        await expect(error).to_contain_text("unknown agent 'nope'")


async def test_with_api_keys_the_list_comes_once_the_key_is_given(browser: Browser) -> None:
    served, _ = team_of_three()
    keyed = Settings(api_keys={"sk-agents": "alice"})
    async with chat_page(browser, served, settings=keyed) as page:
        await page.goto("/?agent=billing")
        picker, note = page.locator("#agent"), page.locator("#agent-note")
        await expect(note).to_have_text("enter the API key to list the agents", timeout=WAIT_MS)
        await expect(picker).to_have_attribute("data-state", "unlisted")
        await expect(picker).to_have_value("billing")  # the address's choice still stands
        await expect(page.locator("#api-key")).not_to_have_attribute("aria-invalid", "true")

        await page.locator("#api-key").fill("sk-agents")
        await page.locator("#api-key").press("Tab")  # the key is committed: list again
        await expect(picker).to_have_attribute("data-state", "listed", timeout=WAIT_MS)
        await expect(note).to_be_hidden()
        assert [value for value, _ in await options(page)] == ["", "billing", "team", "weather"]
        await expect(picker).to_have_value("billing")


# ---- a nested agent's client tool, answered by the page (issue 30, item 9) -------------------


async def test_the_page_answers_a_client_tool_called_by_an_agent_used_as_a_tool(
    browser: Browser,
) -> None:
    researcher = agent(
        "researcher",
        [
            tool_turn(call("get_browser_timezone", {}, id="n1")),
            "Your browser is set to its zone.",
        ],
    )
    writer = agent(
        "writer",
        [tool_turn(call("researcher", {"input": "Which time zone?"}, id="w1")), "Done."],
        tools=[researcher.as_tool()],
    )
    async with chat_page(browser, writer, model_of(writer), model_of(researcher)) as page:
        reply = await answered(page, "What is my time zone?")

        record = reply.locator("details.tool-call[data-call-id=w1]")
        await expect(record).to_have_attribute("data-status", "success")
        await record.locator("> summary").click()
        run = record.locator(".nested-run")
        await expect(run.locator(".tool-note")).to_contain_text("browser time zone:")
        await expect(run.locator(".tool-note.failed")).to_have_count(0)
        answers = await page.evaluate("window.__toolAnswers")
        assert [(a["call_id"], a["tool"], a["status"]) for a in answers] == [
            ("n1", "get_browser_timezone", 200)
        ]
        assert await answer_text(reply) == "Done."
        await screenshot(page, "agent-as-tool-client-tool")

    [answer] = [m for m in model_of(researcher).requests[1].messages if m.role == "tool"]
    assert answer.content == answers[0]["body"]["result"]
