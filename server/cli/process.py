"""The ``agent-executor`` process: logging, the garbage collector, and running the service
until SIGTERM (``serve``) or until the MCP client closes stdin (``mcp``)."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from aiohttp import web
from prometheus_client import disable_created_metrics

from agent_executor import ConfigurationError
from agent_executor.errors import MissingExtraError

from ..app import begin_shutdown
from ..descriptors import DescriptorBudget, quiet_failed_accepts, raise_descriptor_limit
from ..event_loop import loop_factory
from .announce import announce
from .build import Service, build_service, build_service_with_mcp
from .config import ServeConfig
from .errors import CliError
from .logs import AccessLog, configure_logging
from .parser import build_parser

if TYPE_CHECKING:
    from agent_executor.tools.mcp import MCPConfig

__all__ = ["main"]

logger = logging.getLogger("server")


_Runner = Callable[[Service | Awaitable[Service], ServeConfig], Coroutine[Any, Any, None]]
"""How a command runs its built service: :func:`_serve`, or ``serve_stdio`` for ``mcp``."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``agent-executor`` console script."""
    args = build_parser().parse_args(argv)
    disable_created_metrics()  # type: ignore[no-untyped-call]  # half the series, none used
    try:
        config = ServeConfig.from_args(args, os.environ)
        configure_logging(config.log_format, config.log_level)
        config.settings()  # bad settings are refused before any MCP server starts
        limit = raise_descriptor_limit()  # before the app reads it (its stream budget)
        run = _stdio_runner() if args.command == "mcp" else _serve
        service: Service | Awaitable[Service]
        if config.mcp_config:
            service = build_service_with_mcp(config, _mcp_config(config.mcp_config))
        else:
            service = build_service(config)
        _tune_gc(config.gc_threshold)
        if limit is not None:  # the configuration is sound: the start-up log begins
            streams = DescriptorBudget(limit).max_streams
            logger.info("open-file limit %d: room for %s streams at once", limit, streams)
        _run_loop(run(service, config))
    except (CliError, ConfigurationError) as exc:
        for handler in logging.getLogger().handlers:
            handler.flush()  # the lines logged so far come before the refusal's
        print(f"agent-executor: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    logger.info("agent-executor stopped")
    return 0


def _run_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` to its end on the service's event loop (``server/event_loop.py``)."""
    factory = loop_factory()
    if factory is None or sys.version_info < (3, 11):
        asyncio.run(main)
        return
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main)


def _stdio_runner() -> _Runner:
    """``agent-executor mcp``'s runner, or a :class:`CliError` if the MCP SDK is missing
    (before anything is built)."""
    try:
        from .mcp_stdio import serve_stdio
    except MissingExtraError:
        raise CliError(
            "agent-executor mcp needs the MCP SDK: pip install 'agent-executor[mcp]'"
        ) from None
    return serve_stdio


async def _serve(service: Service | Awaitable[Service], config: ServeConfig) -> None:
    """Serve until SIGTERM or SIGINT, saying where only once the address is bound (so the
    line names the real port of ``--port 0``); an address that cannot be bound is a
    :class:`CliError` (one line, no traceback).

    On the signal the service shuts down the way a load balancer expects: at once, readiness
    answers 503 and new runs are refused with 503 (:func:`begin_shutdown`); the listener
    stays open while running streams get ``--shutdown-grace`` seconds to finish (the app's
    shutdown); only then does it close, and the app is cleaned up. A second signal stops the
    process at once.
    """
    if not isinstance(service, Service):
        service = await service
    quiet_failed_accepts(asyncio.get_running_loop())
    settings = service.settings
    app = service.app
    runner = _DrainingRunner(
        app,
        access_log_class=AccessLog,
        handler_cancellation=True,
        shutdown_timeout=settings.shutdown_grace_seconds + 5,
    )
    await runner.setup()
    try:
        site = web.TCPSite(
            runner,
            settings.host,
            settings.port,
            backlog=4096,  # bursts of thousands of connects (the kernel caps it at somaxconn)
        )
        try:
            await site.start()
        except OSError as exc:  # in use, not an address of this machine, not allowed
            where = f"{settings.host}:{settings.port}"
            raise CliError(f"cannot listen on {where}: {exc.strerror or exc}") from None
        announce(service, config, runner.addresses)
        signum = await _signalled(lambda: begin_shutdown(app))
        logger.info(
            "%s: shutting down (not ready, new runs refused; up to %g s for running streams)",
            signum.name,
            settings.shutdown_grace_seconds,
        )
        await runner.shutdown()
    finally:
        await runner.cleanup()


class _DrainingRunner(web.AppRunner):
    """An ``AppRunner`` whose app shutdown runs while the listener is still open.

    aiohttp's ``cleanup`` closes the listener first and then shuts the app down (its
    ``on_shutdown``: the grace period of the streams and MCP calls), so a load balancer would
    meet refused connections for the whole grace. Here :meth:`shutdown` is awaited first, and
    ``cleanup`` does not run it again.
    """

    __slots__ = ("_shut_down",)

    def __init__(self, app: web.Application, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._shut_down = False

    async def shutdown(self) -> None:
        """The app's shutdown, once."""
        if self._shut_down:
            return
        self._shut_down = True
        await super().shutdown()


async def _signalled(on_signal: Callable[[], None]) -> signal.Signals:
    """Return the signal on SIGTERM or SIGINT, after calling ``on_signal`` at once (from the
    signal's callback). The handlers are removed then: another signal has its default effect.
    """
    received: list[signal.Signals] = []
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def handle(signum: signal.Signals) -> None:
        if not received:
            received.append(signum)
            on_signal()
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, handle, signum)
    try:
        await stop.wait()
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
    return received[0]


def _mcp_config(path: str) -> MCPConfig:
    try:
        from agent_executor.tools.mcp import load_config
    except MissingExtraError:
        raise CliError("--mcp needs the MCP SDK: pip install 'agent-executor[mcp]'") from None
    try:
        return load_config(path)
    except ConfigurationError as exc:
        raise CliError(str(exc)) from None


_MIDDLE_EVERY = 100
"""Young collections per collection of the middle generation (Python's default: 10)."""


def _tune_gc(threshold: int) -> None:
    """Fewer and shorter garbage collections under load.

    Everything start-up built (modules, the app, the agents) is long-lived: frozen, it is never
    scanned again. Open streams hold a few hundred tracked objects each, and with Python's
    default threshold of 700 allocations the collector keeps promoting them and re-scanning
    them all: at 1,000 streams that was a quarter of the service's CPU, with full collections
    pausing every stream for ~200 ms. At 9,000 streams the middle generation, collected every
    ten young collections, still cost a second of CPU per burst and promoted the streams'
    objects into the old one fast enough for two full collections, the last pausing every
    stream for a second; collected every hundred, neither happens (docs/benchmarks.md). The
    young collections themselves found almost nothing to free (2,296 objects in a 9,000-stream
    burst's 479), so they run every 50,000 allocations: half their CPU. The service leaves
    almost no reference cycles, so collecting less often costs next to no memory.
    """
    if threshold == 0:
        return
    gc.collect()
    gc.freeze()
    gc.set_threshold(threshold, _MIDDLE_EVERY, gc.get_threshold()[2])
    young, middle, _ = gc.get_threshold()
    logger.info(
        "garbage collector: %d start-up objects frozen, young generation collected every %d "
        "allocations, the middle one every %d young collections",
        gc.get_freeze_count(),
        young,
        middle,
    )
