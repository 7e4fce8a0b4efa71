"""What every corpus collector writes: one row per text, and one byte-for-byte repeatable file;
and how the tests, the trainer and the benchmarks read it back (:func:`read_rows`) and join
texts into long ones (:func:`concatenated`).

``collect_direct.py``, ``collect_indirect.py`` and ``collect_multilingual.py`` build their
rows with :func:`corpus_row` and write them with :func:`write_rows`, so the three files share
one shape and a re-run on the same inputs gives the same bytes.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from pathlib import Path


def corpus_row(
    text: str, label: str, source: str, kind: str, origin: str, **extra: str
) -> dict[str, str]:
    """A corpus row: the text with Windows line ends and outer blanks removed, then its labels."""
    text = text.replace("\r\n", "\n").strip()
    return {"text": text, "label": label, "source": source, "kind": kind, "origin": origin, **extra}


def write_rows(rows: Iterable[dict[str, str]], out: Path) -> None:
    """``rows`` as gzip JSON lines (keys sorted, no timestamp or name in the gzip header)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    with out.open("wb") as handle, gzip.GzipFile("", "wb", fileobj=handle, mtime=0) as packed:
        packed.write(data.encode("utf-8"))


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a file :func:`write_rows` wrote, or of a plain ``.jsonl`` one (the corpora
    written here). Lines are split at ``\\n`` only: a text may hold U+2028 or U+0085, which
    ``str.splitlines`` would also split at."""
    raw = path.read_bytes()
    data = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8")
    return [json.loads(line) for line in data.split("\n") if line]


def concatenated(parts: Iterable[str], size: int) -> list[str]:
    """Texts of exactly ``size`` characters, made of consecutive ``parts`` joined by blank
    lines (the last incomplete one is dropped)."""
    texts: list[str] = []
    current: list[str] = []
    length = 0
    for part in parts:
        current.append(part)
        length += len(part) + 2
        if length >= size:
            texts.append("\n\n".join(current)[:size])
            current, length = [], 0
    return texts
