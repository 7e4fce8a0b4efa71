"""``ask_user``: the built-in tool with which the model asks the person a question.

It needs a person's answer, so the run pauses on it as on an approval (see
:mod:`agent_executor.approvals`) and the answer comes back as the call's result.
"""

from __future__ import annotations

from typing import Any

from .base import Tool

__all__ = ["ASK_USER", "AskUserTool"]


class AskUserTool(Tool):
    """``ask_user(question)``: the model asks the person a question and waits for the answer.

    The run pauses as for an approval; the answer comes back as the call's result.
    """

    def __init__(self) -> None:
        super().__init__(
            name="ask_user",
            description="Ask the user a question and wait for the answer. Use it when you need "
            "information or a decision only the user can give.",
            parameters={
                "type": "object",
                "properties": {"question": {"type": "string", "description": "The question."}},
                "required": ["question"],
                "additionalProperties": False,
            },
            requires_approval=True,
        )

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        """Not called: the answer comes from the person when the run resumes."""
        raise RuntimeError("ask_user is answered by the user when the run resumes")


ASK_USER = AskUserTool()
"""The built-in ``ask_user`` tool; add it to ``tools`` to let the model ask questions."""
