"""Runs that outlive their connection: the event log a client re-attaches to (:mod:`.log`),
the hub that keeps each run for its client to come back (:mod:`.hub`), and the runs of other
replicas (:mod:`.relay`; in Redis: :mod:`.redis`, imported only with ``--redis-url``)."""

from .hub import STOPPED, LiveRun, RunHub, RunRelay
from .log import EventLog, LogReader
from .relay import REPLICA_GONE, RemoteRun

__all__ = [
    "REPLICA_GONE",
    "STOPPED",
    "EventLog",
    "LiveRun",
    "LogReader",
    "RemoteRun",
    "RunHub",
    "RunRelay",
]
