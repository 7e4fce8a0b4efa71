"""OutputGuard: secrets never reach the user, however the stream splits them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_executor import AgentCommand, AssistantMessage, MessageEvent, ModelChunk
from agent_executor.guards.output import OutputGuard

from .helpers import collect, make_executor, sample, split_at

KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t"
AWS = "AKIAIOSFODNN7EXAMPLE"
TEXT = f"Use {KEY} for the API, {AWS} for S3, and ask jane@example.com. Done."


def run_filter(guard: OutputGuard, pieces: list[str]) -> list[str]:
    text_filter = guard.start()
    released = [text_filter.feed(piece) for piece in pieces]
    released.append(text_filter.flush())
    return released


@settings(max_examples=300)
@given(cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=40))
def test_no_split_of_the_stream_lets_a_secret_through(cuts: list[int]) -> None:
    guard = OutputGuard(emails=True)

    released = run_filter(guard, split_at(TEXT, cuts))

    assert "".join(released) == (
        "Use [redacted] for the API, [redacted] for S3, and ask [redacted]. Done."
    )
    for secret in (KEY, AWS, "jane@example.com"):
        pieces = {secret[i : i + 6] for i in range(len(secret) - 5)}
        assert not any(piece in chunk for chunk in released for piece in pieces)


def test_ordinary_text_is_released_as_soon_as_each_word_ends() -> None:
    text_filter = OutputGuard(emails=True).start()
    words = (
        "The",
        "weather",
        "in",
        "Paris",
        "is",
        "mild",
        "today,",
        "with",
        "light",
        "wind",
        "from",
        "the",
        "west.",
    )

    for word in words:
        released = text_filter.feed(word + " ")
        assert released == word + " "
        assert text_filter.held == ""


def test_the_word_being_written_is_held_until_it_ends() -> None:
    text_filter = OutputGuard().start()

    assert text_filter.feed("Here: sk-pr") == "Here: "
    assert text_filter.held == "sk-pr"
    assert text_filter.feed("oj is not a key") == "sk-proj is not a key"


def test_terms_phones_and_custom_patterns() -> None:
    guard = OutputGuard(
        secrets=False, terms=["Project Falcon"], phones=True, patterns={"ticket": r"TCK-\d{6}"}
    )

    released = "".join(
        run_filter(guard, list("project falcon ships; call +1 415 555 0134 about TCK-123456 now."))
    )

    assert released == "[redacted] ships; call [redacted] about [redacted] now."


async def test_through_the_executor_the_user_never_sees_the_key() -> None:
    chunks = [ModelChunk(text=ch) for ch in f"The key is {KEY}, keep it safe."]
    executor = make_executor([chunks], output_guard=OutputGuard())
    command = AgentCommand(user_prompt="key?", user_id="u", session_id="s")

    events = await collect(executor, command)

    texts = [e.text for e in events if isinstance(e, MessageEvent)]
    assert "".join(texts) == "The key is [redacted], keep it safe."
    assert not any("sk-" in t or "Ab3d" in t for t in texts)
    stored = await executor.memory.load("u", "s")
    assert stored[-1] == AssistantMessage(content="The key is [redacted], keep it safe.")


async def test_block_ends_the_run_before_any_of_the_secret_is_released() -> None:
    chunks = [ModelChunk(text=piece) for piece in ("Sure: ", KEY[:10], KEY[10:], " enjoy")]
    executor = make_executor([chunks], output_guard=OutputGuard(action="block"))

    result = await executor.execute(AgentCommand(user_prompt="key?"))

    assert result.error is not None
    # the output guard is a guard, not a hook: its own code and metric label (issue #18)
    assert result.error.code == "output_blocked"
    assert result.error.message == "the answer was withheld: it contained a api key"
    assert result.content == "Sure: "
    registry = executor.metrics.registry
    assert (
        sample(
            registry,
            "agent_executor_guard_rejections_total",
            guard="output_guard",
            code="output_blocked",
        )
        == 1
    )
    assert sample(registry, "agent_executor_hook_rejections_total", hook="output_guard") == 0


async def test_without_an_output_guard_text_passes_untouched() -> None:
    executor = make_executor([[ModelChunk(text=f"key {KEY}")]])

    result = await executor.execute(AgentCommand(user_prompt="x"))

    assert result.content == f"key {KEY}"
