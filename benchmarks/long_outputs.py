"""What a long model output costs per streamed chunk, by its length: linear or not.

Two outputs a model may write at length, each fed in 4-character chunks as a local model
streams, for 2,000, 8,000 and 32,000 characters:

- a **prompt-mode answer**: a model without function calling answers through
  :class:`~agent_executor.PromptToolsModel` in JSON steps, and the final answer's text is
  streamed while its JSON string is still open (``json.dumps`` of an answer with quotes,
  escapes and emoji, which it writes as surrogate pairs);
- a **tool call's arguments**: a ``write_file`` call whose ``content`` is code, streamed as
  argument fragments of one call through ``AgentExecutor.execute_stream()`` (the executor
  asks at every fragment whether the call is complete, for eager tools).

It prints the CPU time per chunk. Flat means linear: a chunk costs the same however much
came before it.

    python benchmarks/long_outputs.py [--chars 2000,8000,32000] [--chunk 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    PromptToolsModel,
    ScriptedModel,
    UserMessage,
    tool,
)
from agent_executor.models import ModelRequest
from agent_executor.models.scripted import call, text_turn, tool_turn

_REPEAT = 5
"""Measurements per figure; the smallest is printed (the least disturbed by the machine)."""
_SENTENCE = 'A long answer with "quotes", a backslash \\, a newline\n, é, ✓ and 😀. '


_CODE = 'function f(x) { return {a: x, s: "}"}; }\n'


@tool
def write_file(path: str, content: str) -> str:
    """Write a file."""
    return f"wrote {len(content)} characters to {path}"


def answer_cost(chars: int, chunk: int) -> float:
    """CPU µs per chunk to stream a final answer of ``chars`` characters through
    ``PromptToolsModel`` (the scripted model under it costs the same for every chunk)."""
    answer = (_SENTENCE * (chars // len(_SENTENCE) + 1))[:chars]
    text = json.dumps({"thought": "I know it.", "action": "final_answer", "answer": answer})
    model = PromptToolsModel(ScriptedModel([text_turn(text, chunk_size=chunk)]))
    tool = {"type": "function", "function": {"name": "noop", "parameters": {"type": "object"}}}
    request = ModelRequest([UserMessage(content="Talk.")], [tool])

    async def read() -> str:
        return "".join([c.text async for c in model.stream(request) if c.text])

    started = time.process_time()
    streamed = asyncio.run(read())
    spent = time.process_time() - started
    if streamed != answer:
        raise SystemExit(f"the streamed answer of {chars} characters differs from the answer")
    return spent / -(-len(text) // chunk) * 1e6


def arguments_cost(chars: int, chunk: int) -> float:
    """CPU µs per argument fragment of a ``write_file`` call with ``chars`` characters of
    code, through the executor (the scripted model under it costs the same per fragment)."""
    content = (_CODE * (chars // len(_CODE) + 1))[:chars]
    arguments = {"path": "a.js", "content": content}
    turns = [tool_turn(call("write_file", arguments), fragment_size=chunk), text_turn("Done.")]
    agent = AgentExecutor(model=ScriptedModel(turns), tools=[write_file])

    async def run() -> str:
        events = [e async for e in agent.execute_stream(AgentCommand(user_prompt="Write it."))]
        return str(getattr(events[-1], "finish_reason", ""))

    started = time.process_time()
    finish = asyncio.run(run())
    spent = time.process_time() - started
    if finish != "stop":
        raise SystemExit(f"the run with {chars} characters of arguments ended {finish!r}")
    fragments = -(-len(json.dumps(arguments)) // chunk)
    return spent / fragments * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", default="2000,8000,32000")
    parser.add_argument("--chunk", type=int, default=4)
    args = parser.parse_args()
    answer_cost(200, args.chunk), arguments_cost(200, args.chunk)  # warm-up: imports, caches
    print("| characters | prompt-mode answer, µs/chunk | tool-call arguments, µs/fragment |")
    print("|---|---|---|")
    for chars in map(int, args.chars.split(",")):
        answer = min(answer_cost(chars, args.chunk) for _ in range(_REPEAT))
        arguments = min(arguments_cost(chars, args.chunk) for _ in range(_REPEAT))
        print(f"| {chars:,} | {answer:.1f} | {arguments:.1f} |")


if __name__ == "__main__":
    main()
