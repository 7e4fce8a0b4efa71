"""The service's tools in the Bot Server tests (``--tools tests/compat/bot_server_tools.py``):
one that looks an order up, and ``ask_user``, with which the model stops to ask the person."""

from agent_executor import tool
from agent_executor.tools.ask_user import ASK_USER

__all__ = ["ASK_USER", "lookup_order"]


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order's status by its id."""
    return f"order {order_id} shipped"
