"""A server tool that takes a second (``--tools tests/interop/slow_tools.py``), so a test can
cut a client's connection while the run is busy."""

import anyio

from agent_executor import tool


@tool
async def slow_lookup(order_id: str) -> str:
    """Look up an order's status, slowly."""
    await anyio.sleep(1.0)
    return f"order {order_id} shipped"
