"""What reading a prompt-mode answer costs per streamed chunk, by the answer's length.

A model without function calling answers through :class:`~agent_executor.PromptToolsModel`
in JSON steps; the final answer's text is streamed while its JSON string is still open. This
feeds one final-answer step (``json.dumps`` of an answer with quotes, escapes and emoji, which
``json.dumps`` writes as surrogate pairs) to the reader in 4-character chunks, as a local model
streams, and prints the CPU time per chunk for answers of 2,000, 8,000 and 32,000 characters.
Flat means linear: each chunk costs the same however long the answer already is.

    python benchmarks/prompt_tools.py [--chars 2000,8000,32000] [--chunk 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_executor import PromptToolsModel, ScriptedModel, UserMessage
from agent_executor.models import ModelRequest
from agent_executor.models.scripted import text_turn

_SENTENCE = 'A long answer with "quotes", a backslash \\, a newline\n, é, ✓ and 😀. '


def cost_per_chunk(chars: int, chunk: int) -> float:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", default="2000,8000,32000")
    parser.add_argument("--chunk", type=int, default=4)
    args = parser.parse_args()
    for chars in map(int, args.chars.split(",")):
        print(f"{chars:>7,} characters: {cost_per_chunk(chars, args.chunk):8.1f} µs per chunk")


if __name__ == "__main__":
    main()
