"""agent-executor: run LLM agents as a streaming ReAct loop.

``AgentExecutor.execute()`` returns a finished :class:`AgentResult`; ``execute_stream()`` yields
typed events (:class:`MessageEvent`, :class:`ToolStartEvent`, :class:`ToolEndEvent`,
:class:`ErrorEvent`, :class:`DoneEvent`) as the model writes and the tools run.
"""

from ._engine.stream import EventStream
from ._version import __version__
from .approvals import Approval, PendingRun, PendingRunStore
from .command import AgentCommand, ClientTool
from .context import RunContext, current_run_context
from .errors import (
    AgentExecutorError,
    ConfigurationError,
    ErrorCode,
    GuardRejection,
    HookRejection,
    MCPConnectionError,
    MCPToolError,
    ModelError,
    RestConnectionError,
    RestHTTPError,
    RestToolError,
    ScriptExhaustedError,
    StoreUnavailable,
)
from .events import (
    AgentEvent,
    AgentSelectedEvent,
    ApprovalRequiredEvent,
    DoneEvent,
    ErrorEvent,
    MessageEvent,
    ReasoningEvent,
    ToolCallEvent,
    ToolEndEvent,
    ToolStartEvent,
    event_adapter,
)
from .executor import AgentExecutor
from .guards import (
    Guard,
    InjectionGuard,
    InjectionScore,
    InMemoryRateLimitStorage,
    InputValidationGuard,
    LLMJudgeGuard,
    ONNXClassifier,
    OutputGuard,
    RateLimitGuard,
    RateLimitStorage,
    ScreenVerdict,
    ToolResultScreen,
)
from .hooks import AuditLogHook, Hook, ToolAllowlistHook
from .memory import (
    CompactableStore,
    ConversationStore,
    HistoryCompressor,
    InMemoryConversationStore,
    litellm_token_counter,
)
from .messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from .models import (
    ChatModel,
    DemoModel,
    LiteLLMModel,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    OpenAICompatModel,
    ScriptedModel,
    ToolCallDelta,
)
from .observability import LogContextFilter, install_log_context, log_context
from .results import AgentResult, ErrorInfo, PendingApproval, ToolCallRecord
from .routing import AgentRouter, FunctionRouter, ModelRouter, RouteFunction, Router
from .tools import FrontendTool, FunctionTool, Tool, ToolResultRelay, ToolResults, tool
from .tools.ask_user import ASK_USER
from .tools.rest import RestTool

install_log_context()

__all__ = [
    "ASK_USER",
    "AgentCommand",
    "AgentEvent",
    "AgentExecutor",
    "AgentExecutorError",
    "AgentResult",
    "AgentRouter",
    "AgentSelectedEvent",
    "Approval",
    "ApprovalRequiredEvent",
    "AssistantMessage",
    "AuditLogHook",
    "ChatModel",
    "ClientTool",
    "CompactableStore",
    "ConfigurationError",
    "ConversationStore",
    "DemoModel",
    "DoneEvent",
    "ErrorCode",
    "ErrorEvent",
    "ErrorInfo",
    "EventStream",
    "FrontendTool",
    "FunctionRouter",
    "FunctionTool",
    "Guard",
    "GuardRejection",
    "HistoryCompressor",
    "Hook",
    "HookRejection",
    "InMemoryConversationStore",
    "InMemoryRateLimitStorage",
    "InjectionGuard",
    "InjectionScore",
    "InputValidationGuard",
    "LLMJudgeGuard",
    "LiteLLMModel",
    "LogContextFilter",
    "MCPConnectionError",
    "MCPToolError",
    "Message",
    "MessageEvent",
    "ModelChunk",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ModelRouter",
    "ONNXClassifier",
    "OpenAICompatModel",
    "OutputGuard",
    "PendingApproval",
    "PendingRun",
    "PendingRunStore",
    "RateLimitGuard",
    "RateLimitStorage",
    "ReasoningEvent",
    "RestConnectionError",
    "RestHTTPError",
    "RestTool",
    "RestToolError",
    "RouteFunction",
    "Router",
    "RunContext",
    "ScreenVerdict",
    "ScriptExhaustedError",
    "ScriptedModel",
    "StoreUnavailable",
    "SystemMessage",
    "Tool",
    "ToolAllowlistHook",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEvent",
    "ToolCallRecord",
    "ToolEndEvent",
    "ToolMessage",
    "ToolResultRelay",
    "ToolResultScreen",
    "ToolResults",
    "ToolStartEvent",
    "Usage",
    "UserMessage",
    "__version__",
    "current_run_context",
    "event_adapter",
    "install_log_context",
    "litellm_token_counter",
    "log_context",
    "tool",
]
