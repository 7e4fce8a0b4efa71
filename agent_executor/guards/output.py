"""``OutputGuard``: keep secrets and configured terms out of what the model streams to users.

The guard sees the model's text as it streams and releases it only once no pattern can still
match across the point released: every pattern is searched with partial matching (the `regex`
package), and text from the start of a match that may still grow is held back until the next
delta decides it. A value split over two deltas therefore can never leak, and text that cannot
be part of a match is released at once.

Hold-back (the latency cost): with the default patterns, at most the word being written is
held (a word may be the start of a key or an address) until the delta that ends it arrives;
a ``-----BEGIN ... PRIVATE KEY-----`` block is held whole. Measured in
``tests/test_output_guard.py``; see ``docs/guards.md``.

``action="redact"`` replaces each match with ``replacement``; ``action="block"`` ends the run
(``hook_rejected``) at the first match, with nothing of it released.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import regex

__all__ = ["SECRET_PATTERNS", "OutputBlocked", "OutputFilter", "OutputGuard"]

SECRET_PATTERNS: dict[str, str] = {
    "api_key": r"\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{20,200}",
    "aws_access_key": r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b",
    "github_token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})",
    "slack_token": r"\bxox[abprs]-[A-Za-z0-9\-]{10,200}",
    "google_api_key": r"\bAIza[0-9A-Za-z_\-]{35}",
    "stripe_key": r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,200}",
    "jwt": r"\beyJ[A-Za-z0-9_\-]{10,2000}\.[A-Za-z0-9_\-]{10,2000}\.[A-Za-z0-9_\-]{10,2000}",
    "private_key": (
        r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----[\s\S]{0,10000}?-----END [A-Z ]{0,40}"
        r"PRIVATE KEY-----"
    ),
    "assigned_secret": (
        r"(?i:\b(?:api[_-]?key|secret|password|passwd|access[_-]?token)\b\s*[:=]\s*)"
        r"['\"]?[^\s'\"]{8,200}"
    ),
}
"""The ``secrets`` preset: credentials by pattern (each bounded in length)."""

EMAIL_PATTERN = (
    r"\b[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){0,8}"
    r"\.[A-Za-z]{2,24}\b"
)
PHONE_PATTERN = r"(?<![\w+])\+?\d(?:[ ().\-]{0,2}\d){7,14}(?!\w)"


class OutputBlocked(Exception):
    """Raised by an ``OutputFilter`` with ``action="block"`` when a pattern matches."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"the answer was withheld: it contained a {kind.replace('_', ' ')}")
        self.kind = kind


class OutputGuard:
    """Redacts or blocks secrets, configured terms and (if enabled) e-mails and phone numbers.

    Off unless given to ``AgentExecutor(output_guard=...)``; ``OutputGuard()`` is the preset
    the service's ``--output-guard`` flag uses: credentials by pattern, nothing else.
    """

    def __init__(
        self,
        *,
        secrets: bool = True,
        terms: Iterable[str] = (),
        emails: bool = False,
        phones: bool = False,
        patterns: dict[str, str] | None = None,
        replacement: str = "[redacted]",
        action: Literal["redact", "block"] = "redact",
    ) -> None:
        named: dict[str, str] = dict(SECRET_PATTERNS) if secrets else {}
        if emails:
            named["email"] = EMAIL_PATTERN
        if phones:
            named["phone"] = PHONE_PATTERN
        words = sorted({t for t in terms if t.strip()}, key=len, reverse=True)
        if words:
            named["term"] = r"(?i:\b(?:" + "|".join(regex.escape(w) for w in words) + r")\b)"
        named.update(patterns or {})
        if not named:
            raise ValueError("OutputGuard has nothing to look for")
        self._pattern = regex.compile(
            "|".join(f"(?P<{name}>{body})" for name, body in named.items()), regex.V0
        )
        self.replacement = replacement
        self.action = action

    def start(self) -> OutputFilter:
        """A filter for one model turn's text."""
        return OutputFilter(self._pattern, self.replacement, self.action == "block")


class OutputFilter:
    """Filters one stream of text deltas; ``feed`` returns what may be released now."""

    __slots__ = ("_block", "_held", "_pattern", "_replacement")

    def __init__(self, pattern: regex.Pattern[str], replacement: str, block: bool) -> None:
        self._pattern = pattern
        self._replacement = replacement
        self._block = block
        self._held = ""

    @property
    def held(self) -> str:
        """Text received and not released yet."""
        return self._held

    def feed(self, text: str) -> str:
        """Add a delta; return the text that can no longer be part of a match (redacted)."""
        buffer = self._held + text
        released: list[str] = []
        position = 0
        hold_from = len(buffer)
        for match in self._pattern.finditer(buffer, partial=True):
            if match.partial or match.end() == len(buffer):
                hold_from = (
                    match.start()
                )  # it may still grow (an empty one at the end holds nothing)
                break
            released.append(buffer[position : match.start()])
            released.append(self._matched(match))
            position = match.end()
        released.append(buffer[position:hold_from])
        self._held = buffer[hold_from:]
        return "".join(released)

    def flush(self) -> str:
        """The end of the stream: release what was held, redacted."""
        buffer, self._held = self._held, ""
        return self._pattern.sub(self._matched, buffer)

    def _matched(self, match: regex.Match[str]) -> str:
        if self._block:
            raise OutputBlocked(match.lastgroup or "pattern")
        return self._replacement
