"""The injection guard's fast paths give what their plain definitions give.

``clean``, ``fold``, ``mixed_scripts``, the leet tokens and the spaced-letters gate each skip
work that most texts do not need, and two decoders' patterns are written so that ``re`` skips
to where a match can start (docs/benchmarks.md, "The normal form's slow paths for text outside
ASCII"). Each is held here to the definition it replaces, written out plainly, on every text of
the public corpora and on generated text made of the characters the shortcuts are about:
full-width forms, Greek and Cyrillic look-alikes, curly quotes, letters drawn as emoji,
combining marks, invisible characters, leet characters, hex and binary digits and separators.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_executor.guards.injection import decoding, normalisation

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from corpus_rows import read_rows  # noqa: E402

_CHARACTERS = (
    [chr(code) for code in range(0x20, 0x250)]
    + [chr(code) for code in range(0x370, 0x530)]
    + [chr(code) for code in range(0x2000, 0x2070)]
    + [chr(code) for code in range(0x3000, 0x3010)]
    + [chr(code) for code in range(0xFF00, 0xFF70)]
    + [chr(code) for code in range(0x1F150, 0x1F200)]
    + ["\n", "\u4e2d", "\u6587", "\u0301", "\u0308", "\ufe0f", "\U000e0041", "\u0570", "\u0585"]
)
_DIGITS = [*"0123456789abcdefABCDEFxyz", " ", ":", ",", "-", "\n", "  "]
_HEX_SPACED_RE = re.compile(
    r"(?<![0-9A-Fa-f])(?<![0-9A-Fa-f]{2}[ :,-])(?:[0-9A-Fa-f]{2}[ :,-]){7,}[0-9A-Fa-f]{2}"
    r"(?![0-9A-Fa-f])"
)
_BINARY_RE = re.compile(r"(?<![01])(?:[01]{8}[ ,]?){6,}")
_LEET = [*"abcegilostxyz0123456789@$!|", " ", "  ", ".", "-", "_", "\n", "\u00e9", "\u0434"]


@cache
def _corpus_texts() -> list[str]:
    paths = sorted(DATA.glob("injection_*.jsonl.gz"))
    return sorted({row["text"] for path in paths for row in read_rows(path)})


def _clean(text: str) -> str:
    if text.isascii():
        return text
    return normalisation._INVISIBLE_RE.sub("", unicodedata.normalize("NFKC", text))


def _fold(clean: str) -> str:
    if clean.isascii():
        return normalisation._collapsed(clean.casefold())
    decomposed = normalisation._MARKS_RE.sub("", unicodedata.normalize("NFKD", clean))
    return normalisation._collapsed(decomposed.casefold().translate(normalisation._CONFUSABLES))


def _mixed_scripts(text: str) -> bool:
    return not text.isascii() and bool(normalisation._MIXED_RE.search(text))


def _mixed_tokens(norm: str) -> list[tuple[int, int]]:
    return [match.span() for match in normalisation._MIXED_TOKEN_RE.finditer(norm)]


def _despaced_gate_holds(norm: str) -> bool:
    """Where the gate says no run of single letters can be there, the regex finds none."""
    words = normalisation.words_view(norm).split()
    if "_" in norm or normalisation._six_singles(words):
        return True
    return normalisation._SINGLES_RE.search(norm) is None


def _blob_differences(text: str) -> list[str]:
    """The decoder patterns whose matches in ``text`` differ from the plain patterns'."""
    pairs = {
        "spaced hex": (decoding._HEX_SPACED_RE, _HEX_SPACED_RE),
        "binary": (decoding._BINARY_RE, _BINARY_RE),
    }
    return [
        name
        for name, (fast, plain) in pairs.items()
        if [m.span() for m in fast.finditer(text)] != [m.span() for m in plain.finditer(text)]
    ]


def _differences(text: str) -> list[str]:
    """The steps whose fast path reads ``text`` otherwise than its plain definition."""
    cleaned = normalisation.clean(text)
    norm = _fold(cleaned)
    checks = {
        "clean": cleaned == _clean(text),
        "fold": normalisation.fold(cleaned) == _fold(cleaned),
        "fold, uncleaned": normalisation.fold(text) == _fold(text),
        "mixed_scripts": normalisation.mixed_scripts(text) == _mixed_scripts(text),
        "leet tokens": normalisation._mixed_tokens(norm) == _mixed_tokens(norm),
        "despaced gate": _despaced_gate_holds(norm),
    }
    return [step for step, same in checks.items() if not same]


@pytest.mark.skipif(not (DATA / "injection_public.jsonl.gz").exists(), reason="no corpora")
def test_every_corpus_text_reads_as_the_plain_definitions_read_it() -> None:
    texts = _corpus_texts()
    assert len(texts) > 30_000
    differing = {
        text[:60]: found
        for text in texts
        if (found := _differences(text) + _blob_differences(text))
    }
    assert differing == {}


@settings(max_examples=3_000, deadline=None)
@given(st.lists(st.sampled_from(_CHARACTERS), max_size=60).map("".join))
def test_generated_text_outside_ascii_reads_as_the_plain_definitions_read_it(text: str) -> None:
    assert _differences(text) == []


@settings(max_examples=3_000, deadline=None)
@given(st.lists(st.sampled_from(_LEET), max_size=60).map("".join))
def test_generated_leet_and_spelled_out_text_reads_as_the_plain_definitions_read_it(
    text: str,
) -> None:
    assert _differences(text) == []


@settings(max_examples=5_000, deadline=None)
@given(
    st.one_of(
        st.lists(st.sampled_from(_DIGITS), max_size=120).map("".join),
        st.lists(
            st.sampled_from(["01001000", "0110100", "01101001", "1", "0", " ", ",", "2"]),
            max_size=24,
        ).map("".join),
    )
)
def test_generated_digits_are_found_by_the_decoders_as_the_plain_patterns_find_them(
    text: str,
) -> None:
    assert _blob_differences(text) == []


def test_full_width_forms_narrowed_first_are_their_nfkc_forms() -> None:
    for wide, narrow in normalisation._NARROW.items():
        assert unicodedata.normalize("NFKC", wide) == narrow


def test_the_look_alike_classes_hold_every_look_alike_and_the_other_class_nothing_else() -> None:
    """``_unconfused`` translates a text with Greek or Cyrillic letters, and in any other
    replaces what ``_OTHER_CONFUSED_RE`` finds: every look-alike is in one of the two, and
    that class holds look-alikes only (each found one is looked up)."""
    looked = {chr(code) for code in normalisation._CONFUSABLES}
    other = {chr(c) for c in range(0x110000) if normalisation._OTHER_CONFUSED_RE.match(chr(c))}
    scripts = {char for char in looked if normalisation._SCRIPTS_RE.match(char)}
    assert other <= looked
    assert other | scripts == looked
