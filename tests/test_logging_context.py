"""Every log record of a run carries request, user and session ids, tools' records included."""

from __future__ import annotations

import inspect
import logging

import pytest

from agent_executor import AgentCommand, LogContextFilter, log_context, tool
from agent_executor._engine import telemetry
from agent_executor._engine.telemetry import RunTelemetry
from agent_executor.models.scripted import call, tool_turn

from .helpers import collect, make_executor

tool_logger = logging.getLogger("tests.tool")


@tool
async def async_logger() -> str:
    """Logs from the event loop."""
    tool_logger.info("async tool ran")
    return "ok"


@tool
def sync_logger() -> str:
    """Logs from a worker thread."""
    tool_logger.info("sync tool ran")
    return "ok"


@pytest.mark.parametrize("mode", ["execute", "stream"])
async def test_tool_log_records_carry_the_run_ids(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    executor = make_executor(
        [tool_turn(call("async_logger"), call("sync_logger")), "done"], [async_logger, sync_logger]
    )
    command = AgentCommand(user_prompt="go", user_id="alice", session_id="s-1")
    caplog.set_level(logging.INFO)

    if mode == "execute":
        await executor.execute(command, request_id="req-42")
    else:
        async for _ in executor.execute_stream(command, request_id="req-42"):
            pass

    records = {r.getMessage(): r for r in caplog.records if r.name == "tests.tool"}
    assert set(records) == {"async tool ran", "sync tool ran"}
    for record in records.values():
        assert (record.request_id, record.user_id, record.session_id) == (  # type: ignore[attr-defined]
            "req-42",
            "alice",
            "s-1",
        )
    finished = [r for r in caplog.records if r.getMessage().startswith("run finished")]
    assert [r.request_id for r in finished] == ["req-42"]  # type: ignore[attr-defined]


async def test_ids_do_not_leak_out_of_a_run(caplog: pytest.LogCaptureFixture) -> None:
    executor = make_executor(["hi"])
    caplog.set_level(logging.INFO)

    await executor.execute(AgentCommand(user_prompt="x", user_id="bob"))
    tool_logger.info("after the run")

    after = [r for r in caplog.records if r.getMessage() == "after the run"]
    assert after[0].request_id == "-" and after[0].user_id == "-"  # type: ignore[attr-defined]


async def test_generated_request_ids_differ_per_run(caplog: pytest.LogCaptureFixture) -> None:
    executor = make_executor(["a", "b"])
    caplog.set_level(logging.INFO)

    await collect(executor, "1")
    await collect(executor, "2")

    ids = [
        r.request_id
        for r in caplog.records  # type: ignore[attr-defined]
        if r.getMessage().startswith("run finished")
    ]
    assert len(ids) == 2 and len(set(ids)) == 2 and "-" not in ids


def test_the_filter_stamps_records_made_elsewhere() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "msg", None, None)
    with log_context(request_id="r", user_id="u", session_id=None):
        LogContextFilter().filter(record)
    assert (record.request_id, record.user_id, record.session_id) == ("r", "u", "-")  # type: ignore[attr-defined]


async def test_the_run_finished_record_names_the_line_that_logged_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The line is logged without the logger's search for its caller; the record still names
    the caller's file, line and function, as ``logger.log`` would."""
    executor = make_executor(["hi"])
    caplog.set_level(logging.INFO)

    await executor.execute(AgentCommand(user_prompt="x"))

    (record,) = [r for r in caplog.records if r.getMessage().startswith("run finished")]
    source, first = inspect.getsourcelines(RunTelemetry._count)
    line = first + next(i for i, text in enumerate(source) if text.strip() == "_log(")
    where = (record.pathname, record.lineno, record.funcName, record.module)
    assert where == (telemetry.__file__, line, "_count", "telemetry")
