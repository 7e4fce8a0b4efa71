"""The service's own tools in the tests of the UI message stream under the AI SDK's chat
client (``--tools tests/interop/ui_tools.py``, tests/interop/test_ui_chat.py): one that runs,
one that waits for a person's approval, and one that holds its run until the client lets it go
on (an answer still in flight, for the SDK's resume)."""

from __future__ import annotations

from urllib.parse import urlsplit

import aiohttp

from agent_executor import tool


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order's status by its id."""
    return f"order {order_id} shipped"


@tool(requires_approval=True)
def cancel_order(order_id: str) -> str:
    """Cancel an order (a person approves it first)."""
    return f"order {order_id} cancelled"


@tool(timeout=20)
async def hold(url: str) -> str:
    """Wait for the gate at ``url`` (the test's, on 127.0.0.1) to answer; return its answer."""
    if urlsplit(url).hostname != "127.0.0.1":
        raise ValueError("the gate must be on 127.0.0.1")
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return await response.text()
