"""Where JSON text that arrives in pieces stands: inside a string or not, how deep in brackets.

Two readers of streamed model output need this one character at a time, and each character
once, so that a piece costs its own length however much came before it: the tool-call
assembler (are a call's arguments one whole object yet?) and prompt mode's step reader (where
does a step end, where does its answer string begin?). A string's body is skipped in C, by
one regex, up to its closing quote; an escape split between two pieces is finished in the
next one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["JsonOutline"]

_STRING_BODY = re.compile(r'(?:[^"\\]|\\.)*', re.DOTALL)
_SPACE = re.compile(r"[ \t\r\n]*")


class JsonOutline:
    """The structure of JSON text read a piece at a time (see the module docstring).

    :meth:`marks` yields ``(index, char)`` for each character of a piece that tells the
    structure: outside strings every character but JSON whitespace, inside a string only the
    quote that closes it. ``depth`` and ``in_string`` are still those *before* that character
    when it is yielded, and take it into account once the consumer asks for the next one. A
    quote opens a string only inside a bracket (text around the JSON has no strings); a
    closing bracket with nothing open changes nothing. ``brackets`` are the pairs counted.
    """

    __slots__ = ("_closers", "_escape", "_openers", "depth", "in_string")

    def __init__(self, brackets: str = "{}[]") -> None:
        self._openers, self._closers = brackets[0::2], brackets[1::2]
        self.depth = 0
        self.in_string = False
        self._escape = False  # the piece before ended inside an escape

    def marks(self, text: str) -> Iterator[tuple[int, str]]:
        index, size = 0, len(text)
        if self._escape and size:
            index, self._escape = 1, False  # the escaped character
        while index < size:
            if self.in_string:
                index = _STRING_BODY.match(text, index).end()  # type: ignore[union-attr]
                if index >= size:
                    break
                if text[index] == "\\":  # the last character: its escape ends in the next piece
                    self._escape = True
                    break
                yield index, '"'
                self.in_string = False
            else:
                index = _SPACE.match(text, index).end()  # type: ignore[union-attr]
                if index >= size:
                    break
                char = text[index]
                yield index, char
                if char == '"':
                    self.in_string = self.depth > 0
                elif char in self._openers:
                    self.depth += 1
                elif char in self._closers and self.depth:
                    self.depth -= 1
            index += 1
