"""How much of an attack the injection guard still sees once an encoding or transform hides it.

    python benchmarks/injection_transforms.py [--limit 200] [--out results.json]

Public attacks the guard flags as written (``tests/data/injection_direct.jsonl.gz`` and
``injection_public.jsonl.gz``: ASCII, 5 to 40 words, a seeded sample) are put through each
transform of ``tests/data/transforms.py`` (the ones red-team tools ship: reverse, ROT13, any
Caesar shift, Atbash, base64, base32, hex, binary, URL and HTML escapes, ``\\u`` escapes,
quoted-printable, Morse, Braille, leetspeak, letters spaced out or one per line, zero-width
characters, full-width letters), and scored by the default guard. Benign messages of the same
length go through the same transforms: a decoder must not turn a harmless message, hidden
the same way, into a verdict. Deterministic; about a minute.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from functools import cache
from itertools import islice
from pathlib import Path

from agent_executor.guards.injection.scoring import score_text

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
sys.path.insert(0, str(DATA))
from corpus_rows import read_rows  # noqa: E402
from transforms import TRANSFORMS  # noqa: E402

__all__ = ["TRANSFORMS", "table", "texts"]

SEED = 31


@cache
def _short_texts() -> tuple[tuple[str, str], ...]:
    """(label, text) of the public texts a sample is drawn from: ASCII, 5 to 40 words, no
    encoded rows (the two corpora read once)."""
    found: set[tuple[str, str]] = set()
    for name in ("injection_direct", "injection_public"):
        for row in read_rows(DATA / f"{name}.jsonl.gz"):
            text = row["text"]
            if row["kind"].startswith("encoded") or not text.isascii():
                continue
            if 5 <= len(text.split()) <= 40:
                found.add((row["label"], text))
    return tuple(found)


def texts(label: str, limit: int) -> list[str]:
    """A seeded sample of ``limit`` public texts of ``label`` (see :func:`_short_texts`):
    attacks only if the guard flags them as written, benign ones only if not."""
    ordered = sorted(text for found, text in _short_texts() if found == label)
    random.Random(f"{SEED}:{label}").shuffle(ordered)
    flagged = label == "attack"
    return list(islice((t for t in ordered if (score_text(t).score >= 0.5) == flagged), limit))


def table(limit: int) -> dict[str, dict[str, tuple[int, int]]]:
    """Per transform: attacks flagged once transformed, and benign texts, as (flagged, of)."""
    attacks, benign = texts("attack", limit), texts("benign", limit)
    out = {}
    for name, transform in TRANSFORMS.items():
        out[name] = {
            "attacks": (sum(score_text(transform(t)).score >= 0.5 for t in attacks), len(attacks)),
            "benign": (sum(score_text(transform(t)).score >= 0.5 for t in benign), len(benign)),
        }
    return out


def _share(found: tuple[int, int]) -> str:
    return f"{found[0]}/{found[1]} = {found[0] / found[1]:6.1%}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=200, help="texts of each label")
    parser.add_argument("--out", type=Path, help="JSON results")
    args = parser.parse_args(argv)
    results = table(args.limit)
    print("| transform | attacks still flagged | benign flagged |")
    print("|---|---:|---:|")
    for name, found in results.items():
        print(f"| {name} | {_share(found['attacks'])} | {_share(found['benign'])} |")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
