"""The benchmark scenario, shared by the LLM server, the workers and the orchestrator.

Standard library only: it is imported by the project's venv and by the peers' venv.

One user turn with one tool call: the model answers the first request with a ``get_weather``
call (its arguments split over a few fragments); the request that carries the tool result is
answered with ``tokens`` text deltas, ``delay_ms`` apart, then a usage chunk.

The run parameters travel inside the user's message as ``[bench run=ID tokens=N delay=MS]``, so
every client (SDKs, agent frameworks, our HTTP service) carries them to the server unchanged and
one server serves every variant. The run id lets the server timestamp each run's requests.
"""

from __future__ import annotations

import itertools
import os
import re
import time

__all__ = [
    "ARG_FRAGMENTS",
    "CITY",
    "TOKEN_WORDS",
    "TOOL_SPEC",
    "expected_text",
    "ideal_seconds",
    "now",
    "prompt",
    "weather",
]

CITY = "Paris"
# The tool call's arguments as the model streams them: '{"city": "Paris"}' in 4 fragments.
ARG_FRAGMENTS = ('{"ci', 'ty": ', '"Par', 'is"}')
# Text deltas cycle through these words (a mix of lengths, like real tokens).
TOKEN_WORDS = (" The", " weather", " in", " Paris", " is", " sunny", ",", " 21", "°C", ".")

TOOL_SPEC = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name."}},
            "required": ["city"],
        },
    },
}

PARAMS_RE = re.compile(rb"\[bench run=([\w.-]+) tokens=(\d+) delay=(\d+)\]")


def prompt(run_id: str, tokens: int, delay_ms: int) -> str:
    """The user's message of one run (the server reads the run's parameters from it)."""
    return f"What is the weather in {CITY}? [bench run={run_id} tokens={tokens} delay={delay_ms}]"


def weather(city: str) -> str:
    """The tool's answer (returns at once)."""
    return f"{city}: sunny, 21 °C"


def expected_text(tokens: int) -> str:
    """The text a client must receive for a run of ``tokens`` deltas."""
    return "".join(itertools.islice(itertools.cycle(TOKEN_WORDS), tokens))


def ideal_seconds(tokens: int, delay_ms: int) -> float:
    """Wall time of one run if clients cost nothing: every delayed chunk of both turns."""
    return (len(ARG_FRAGMENTS) + tokens) * delay_ms / 1000


def now() -> float:
    """CLOCK_MONOTONIC: one clock for every process on the machine (server and clients)."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


_ids = itertools.count()


def run_id(prefix: str) -> str:
    """A run id unique on this machine for this benchmark run."""
    return f"{prefix}.{os.getpid()}.{next(_ids)}"
