"""The service's own tools in the interop tests (``--tools tests/interop/server_tools.py``)."""

from agent_executor import tool


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order's status by its id."""
    return f"order {order_id} shipped"
