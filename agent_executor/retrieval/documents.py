"""Documents into passages: Markdown split by heading, then by paragraph within a size bound.

A passage is one section (the text under a heading, down to the next heading) when it fits in
``max_chars``; a longer section is cut between paragraphs (blank lines outside code fences), a
paragraph longer than the bound between lines, and a line longer than the bound anywhere.
Each passage knows its file, its heading path (``title``: ``"Guards › Output guard"``) and a
``source`` with the heading's GitHub-style anchor (``guards.md#output-guard``), so a citation
points at the section. Files other than Markdown are cut by paragraph only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .base import Passage

__all__ = ["load_folder", "split_document"]

MARKDOWN_SUFFIXES = (".md", ".markdown")
TITLE_SEPARATOR = " › "

_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE_RE = re.compile(r"^\s{0,3}(```|~~~)")
_SLUG_DROP_RE = re.compile(r"[^\w\- ]", re.UNICODE)


def load_folder(
    path: str | Path,
    *,
    glob: str = "**/*.md",
    max_chars: int = 1200,
    relative_to: str | Path | None = None,
) -> list[Passage]:
    """The passages of every file under ``path`` matching ``glob``, in path order.

    Sources are file paths relative to ``relative_to`` (default: ``path`` itself), written
    with ``/``. Files are read as UTF-8; empty sections are left out.
    """
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"no such folder: {root}")
    base = Path(relative_to) if relative_to is not None else root
    passages: list[Passage] = []
    for file in sorted(p for p in root.glob(glob) if p.is_file()):
        name = file.resolve().relative_to(base.resolve()).as_posix()
        text = file.read_text(encoding="utf-8")
        markdown = file.suffix.lower() in MARKDOWN_SUFFIXES
        passages += split_document(text, name, max_chars=max_chars, markdown=markdown)
    return passages


def split_document(
    text: str, name: str, *, max_chars: int = 1200, markdown: bool = True
) -> list[Passage]:
    """Cut one document (named ``name``, usually its path) into passages of at most
    ``max_chars`` characters."""
    if max_chars < 80:
        raise ValueError(f"max_chars must be at least 80, not {max_chars}")
    sections = _sections(text) if markdown else [_Section(None, None, 1, text.splitlines())]
    passages = []
    for section in sections:
        source = f"{name}#{section.anchor}" if section.anchor else name
        for piece in _pack(_paragraphs(section.lines), max_chars):
            passages.append(
                Passage(
                    text=piece,
                    source=source,
                    title=section.title,
                    metadata={"path": name, "line": section.line},
                )
            )
    return passages


@dataclass(slots=True)
class _Section:
    title: str | None
    anchor: str | None
    line: int
    lines: list[str]


def _sections(text: str) -> list[_Section]:
    """The document's sections: the text before the first heading, then one per heading."""
    sections = [_Section(None, None, 1, [])]
    headings: list[tuple[int, str]] = []
    anchors: dict[str, int] = {}
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE_RE.match(line):
            fenced = not fenced
        heading = None if fenced else _HEADING_RE.match(line)
        if heading is None:
            sections[-1].lines.append(line)
            continue
        level, words = len(heading.group(1)), _plain(heading.group(2))
        headings = [h for h in headings if h[0] < level] + [(level, words)]
        title = TITLE_SEPARATOR.join(h[1] for h in headings)
        sections.append(_Section(title, _anchor(words, anchors), number, []))
    return sections


def _plain(heading: str) -> str:
    """A heading's text without Markdown code marks and link targets."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return heading.replace("`", "").strip()


def _anchor(heading: str, seen: dict[str, int]) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens,
    ``-1``, ``-2``... for repeats within a document."""
    slug = _SLUG_DROP_RE.sub("", heading.lower()).replace(" ", "-")
    count = seen.get(slug, 0)
    seen[slug] = count + 1
    return f"{slug}-{count}" if count else slug


def _paragraphs(lines: list[str]) -> Iterator[str]:
    """Blocks separated by blank lines; a code fence is one block, blank lines and all."""
    block: list[str] = []
    fenced = False
    for line in lines:
        if _FENCE_RE.match(line):
            fenced = not fenced
        if not line.strip() and not fenced:
            if block:
                yield "\n".join(block)
            block = []
        else:
            block.append(line)
    if block:
        yield "\n".join(block)


def _pack(paragraphs: Iterator[str], max_chars: int) -> Iterator[str]:
    """Whole paragraphs together up to ``max_chars``; longer ones cut (see the module)."""
    current = ""
    for paragraph in paragraphs:
        for piece in _cut(paragraph, max_chars):
            if current and len(current) + 2 + len(piece) > max_chars:
                yield current
                current = ""
            current = f"{current}\n\n{piece}" if current else piece
    if current.strip():
        yield current


def _cut(paragraph: str, max_chars: int) -> Iterator[str]:
    if len(paragraph) <= max_chars:
        yield paragraph
        return
    current = ""
    for line in paragraph.split("\n"):
        while len(line) > max_chars:
            if current:
                yield current
                current = ""
            yield line[:max_chars]
            line = line[max_chars:]
        if current and len(current) + 1 + len(line) > max_chars:
            yield current
            current = ""
        current = f"{current}\n{line}" if current else line
    if current:
        yield current
