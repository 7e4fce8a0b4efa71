"""Public attacks put through the encodings and transforms red-team tools ship are still seen,
and benign messages hidden the same way are not flagged for it (the table in docs/guards.md
comes from ``benchmarks/injection_transforms.py``, which draws the same texts)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_executor.guards.injection.scoring import score_text

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from injection_transforms import TRANSFORMS, texts  # noqa: E402

FLOOR = {"reverse": 0.85, "rot13": 0.85, "caesar-3": 0.85, "caesar-19": 0.85, "atbash": 0.85}
"""Attacks still flagged once transformed, at least (measured: 87.5-90.8%); Braille keeps
letters only: 70%; any other 90%."""
FLOOR |= {"braille": 0.7}


@pytest.fixture(scope="module")
def attacks() -> list[str]:
    return texts("attack", 200)


@pytest.fixture(scope="module")
def benign() -> list[str]:
    return texts("benign", 200)


def test_the_samples_are_large_enough(attacks: list[str], benign: list[str]) -> None:
    assert len(attacks) >= 120
    assert len(benign) == 200


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_a_transformed_public_attack_is_still_flagged(name: str, attacks: list[str]) -> None:
    transform = TRANSFORMS[name]
    missed = [text for text in attacks if score_text(transform(text)).score < 0.5]

    assert 1 - len(missed) / len(attacks) >= FLOOR.get(name, 0.9), (name, missed[:3])


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_a_transformed_benign_message_is_not_flagged_for_it(name: str, benign: list[str]) -> None:
    transform = TRANSFORMS[name]
    flagged = [text for text in benign if score_text(transform(text)).score >= 0.5]

    assert len(flagged) <= 2, (name, flagged)


@pytest.mark.parametrize(
    "text",
    [
        "Pilots spell it Alfa, Bravo, Charlie, Delta, Echo, Foxtrot, Golf, Hotel, India.",
        "Love it \u2764\ufe0f\u2764\ufe0f\u2764\ufe0f\u2764\ufe0f\u2764\ufe0f\u2764\ufe0f!",
        "Ratings: 5 \u2b50\ufe0f, service 4 \u2b50\ufe0f, food 5 \u2b50\ufe0f; ask for Mike",
    ],
)
def test_the_signs_of_a_smuggled_or_spelled_text_alone_are_not_flagged(text: str) -> None:
    """Written here: the NATO alphabet recited, and emoji with their variation selector one by
    one, are what ordinary text holds of the NATO and smuggling decoders' alphabets."""
    assert score_text(text).score < 0.5
