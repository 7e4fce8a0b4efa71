"""Tool-call delta assembly: pure, so tested exhaustively and by property."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from agent_executor import ToolCall, ToolCallDelta
from agent_executor._engine.assembler import ToolCallAssembler

from .helpers import split_at


def assemble(*deltas: ToolCallDelta) -> list[ToolCall]:
    assembler = ToolCallAssembler()
    assembler.add_all(deltas)
    return assembler.calls()


def test_id_and_name_in_the_first_fragment_arguments_in_many() -> None:
    calls = assemble(
        ToolCallDelta(index=0, id="c1", name="get_weather", arguments=""),
        ToolCallDelta(index=0, arguments='{"ci'),
        ToolCallDelta(index=0, arguments='ty": "Paris"}'),
    )
    assert calls == [ToolCall(id="c1", name="get_weather", arguments='{"city": "Paris"}')]


def test_interleaved_calls_are_kept_apart_in_order_of_first_appearance() -> None:
    calls = assemble(
        ToolCallDelta(index=1, id="b", name="second", arguments='{"x"'),
        ToolCallDelta(index=0, id="a", name="first", arguments='{"y"'),
        ToolCallDelta(index=1, arguments=": 1}"),
        ToolCallDelta(index=0, arguments=": 2}"),
    )
    assert calls == [
        ToolCall(id="b", name="second", arguments='{"x": 1}'),
        ToolCall(id="a", name="first", arguments='{"y": 2}'),
    ]


def test_missing_index_is_index_zero() -> None:
    calls = assemble(
        ToolCallDelta(id="c", name="t", arguments='{"a"'),
        ToolCallDelta(index=0, arguments=": 1}"),
    )
    assert calls == [ToolCall(id="c", name="t", arguments='{"a": 1}')]


def test_missing_id_is_generated_and_unique() -> None:
    calls = assemble(
        ToolCallDelta(index=0, name="t", arguments="{}"),
        ToolCallDelta(index=1, name="t", arguments="{}"),
    )
    assert all(call.id.startswith("call_") for call in calls)
    assert calls[0].id != calls[1].id


def test_a_new_id_at_a_used_index_starts_a_new_call() -> None:
    calls = assemble(
        ToolCallDelta(index=0, id="a", name="t", arguments='{"n": 1}'),
        ToolCallDelta(index=0, id="b", name="t", arguments='{"n": 2}'),
    )
    assert [(c.id, c.arguments) for c in calls] == [("a", '{"n": 1}'), ("b", '{"n": 2}')]


def test_a_repeated_id_or_name_is_not_duplicated() -> None:
    calls = assemble(
        ToolCallDelta(index=0, id="a", name="tool", arguments='{"n":'),
        ToolCallDelta(index=0, id="a", name="tool", arguments=" 1}"),
    )
    assert calls == [ToolCall(id="a", name="tool", arguments='{"n": 1}')]


def test_a_name_in_fragments_is_joined_and_a_repeated_name_is_not() -> None:
    calls = assemble(
        ToolCallDelta(index=0, id="c1", name="get_"),
        ToolCallDelta(index=0, name="weather"),
        ToolCallDelta(index=0, name="get_weather", arguments='{"city": '),
        ToolCallDelta(index=0, name="get_weather", arguments='"Oslo"}'),
    )
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", '{"city": "Oslo"}')]


def test_calls_without_index_or_id_are_told_apart_by_their_arguments() -> None:
    calls = assemble(
        ToolCallDelta(name="get_weather", arguments='{"city": "Oslo"}'),
        ToolCallDelta(name="get_weather", arguments='{"city": "Rome"}'),
        ToolCallDelta(name="get_time", arguments="{}"),
    )
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("get_weather", {"city": "Oslo"}),
        ("get_weather", {"city": "Rome"}),
        ("get_time", {}),
    ]
    assert len({c.id for c in calls}) == 3


def test_an_id_that_changes_mid_call_keeps_the_first_one() -> None:
    calls = assemble(
        ToolCallDelta(index=0, id="a1", name="get_weather", arguments='{"city"'),
        ToolCallDelta(index=0, id="a2", arguments=': "Oslo"}'),
    )
    assert calls == [ToolCall(id="a1", name="get_weather", arguments='{"city": "Oslo"}')]


def test_an_id_used_twice_in_a_turn_is_replaced_for_the_second_call() -> None:
    calls = assemble(
        ToolCallDelta(index=0, id="call_0", name="a", arguments="{}"),
        ToolCallDelta(index=1, id="call_0", name="b", arguments="{}"),
    )
    assert calls[0].id == "call_0"
    assert calls[1].id != "call_0" and calls[1].id


def test_an_index_that_arrives_after_the_first_fragment_joins_that_call() -> None:
    calls = assemble(
        ToolCallDelta(id="c", name="t", arguments='{"a"'),
        ToolCallDelta(index=0, arguments=": 1}"),
        ToolCallDelta(index=1, id="d", name="u", arguments="{}"),
    )
    assert [(c.id, c.arguments) for c in calls] == [("c", '{"a": 1}'), ("d", "{}")]


def test_provider_fields_of_a_call_are_kept() -> None:
    signature = {"extra_content": {"google": {"thought_signature": "U0lH"}}}
    calls = assemble(
        ToolCallDelta(id="c", name="t", arguments="{}", provider_fields=signature),
        ToolCallDelta(id="d", name="t", arguments="{}"),
    )
    assert [c.provider_fields for c in calls] == [signature, {}]


def test_empty_arguments_become_an_empty_object() -> None:
    assert assemble(ToolCallDelta(index=0, id="a", name="t"))[0].arguments == "{}"


def test_nothing_added_means_no_calls() -> None:
    assembler = ToolCallAssembler()
    assert not assembler
    assert assembler.calls() == []


arguments_json = st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.one_of(
        st.integers(),
        st.text(max_size=20),
        st.booleans(),
        st.none(),
        st.lists(st.integers(), max_size=3),
    ),
    max_size=5,
).map(json.dumps)


@given(
    calls=st.lists(
        st.tuples(st.from_regex(r"[a-z_]{1,12}", fullmatch=True), arguments_json),
        min_size=1,
        max_size=4,
    ),
    cuts=st.lists(
        st.lists(st.integers(min_value=0, max_value=500), max_size=30), min_size=4, max_size=4
    ),
    interleave_seed=st.randoms(use_true_random=False),
)
def test_any_split_and_interleaving_assembles_to_the_same_calls(
    calls: list[tuple[str, str]], cuts: list[list[int]], interleave_seed: object
) -> None:
    streams = []
    for index, (name, arguments) in enumerate(calls):
        first = ToolCallDelta(index=index, id=f"id{index}", name=name)
        rest = [
            ToolCallDelta(index=index, arguments=piece)
            for piece in split_at(arguments, cuts[index])
        ]
        streams.append([first, *rest])
    merged: list[ToolCallDelta] = []
    rng = interleave_seed
    while any(streams):
        live = [s for s in streams if s]
        merged.append(rng.choice(live).pop(0))  # type: ignore[attr-defined]

    assembled = assemble(*merged)

    expected = [
        ToolCall(id=f"id{i}", name=name, arguments=arguments.strip() or "{}")
        for i, (name, arguments) in enumerate(calls)
    ]
    assert sorted(assembled, key=lambda c: c.id) == expected


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='{}[]"\\:, ab\n'),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)
argument_texts = st.one_of(
    json_values.map(json.dumps),
    st.tuples(
        st.sampled_from(["", " ", "\n\t"]),
        json_values.map(json.dumps),
        st.sampled_from(["", " ", "\r\n", "}", "{}", ' "x"', "]"]),
    ).map("".join),
    st.text(alphabet='{}[]"\\:, a1\n', max_size=30),
)


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


@given(text=argument_texts, cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=12))
def test_complete_arguments_is_json_loads_after_every_fragment(text: str, cuts: list[int]) -> None:
    """What a call's arguments are, read fragment by fragment, is what parsing all of them
    again says, at every fragment (a call ends, and an eager tool starts, on it)."""
    from agent_executor._engine.assembler import _PartialCall

    call, seen = _PartialCall(), ""
    for piece in split_at(text, cuts):
        call.absorb(ToolCallDelta(index=0, arguments=piece))
        seen += piece
        assert call.complete_arguments() == _is_object(seen), seen


def test_a_long_argument_in_small_fragments_assembles_whole() -> None:
    content = 'function f(x) { return {a: x, s: "}"}; }\n' * 2000  # ~80,000 characters
    arguments = json.dumps({"path": "a.js", "content": content})
    deltas = [ToolCallDelta(index=0, id="c1", name="write_file")]
    deltas += [
        ToolCallDelta(index=0, arguments=arguments[i : i + 4]) for i in range(0, len(arguments), 4)
    ]
    assert assemble(*deltas) == [ToolCall(id="c1", name="write_file", arguments=arguments)]
