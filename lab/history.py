"""The history of a run: every client operation and every fault, as plain records.

An operation is recorded twice: ``invoke`` when a client starts it, then exactly one of
``ok`` (it happened), ``fail`` (it definitely did not happen) or ``info`` (we do not know:
a timeout or a lost connection; a timed-out write is not a failed write). Faults are in the
same history, with ``process == NEMESIS`` and ``f`` naming the fault (``kill``, ``pause`` ...):
their invoke is the start, their ok/fail the end.

Times are monotonic nanoseconds (``time.monotonic_ns()``), comparable within one run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

OpType = Literal["invoke", "ok", "fail", "info"]
NEMESIS = -1


@dataclass(frozen=True, slots=True)
class Op:
    type: OpType
    f: str  # write, read, insert, connect, heartbeat, or a fault: kill, pause, latency, ...
    process: int  # client id; NEMESIS for faults
    time: int  # monotonic ns
    workload: str = ""
    endpoint: str = ""  # what the client connected to: a node name, router.writer, ...
    node: str | None = None  # the server that answered, when known
    key: int | None = None
    value: Any = None  # written value, or value read (None: row absent)
    error: int | None = None  # server/client error code (1062, 2013, ...)
    error_msg: str | None = None
    index: int = -1  # position in the history, set by the recorder

    def is_fault(self) -> bool:
        return self.process == NEMESIS


@dataclass(slots=True)
class Sample:
    """A per-second or periodic measurement that is not an operation: replication lag,
    sysbench interval rows, page-cache size."""

    series: str  # "lag", "sysbench", ...
    subject: str  # node or workload
    time: int  # monotonic ns
    values: dict[str, float] = field(default_factory=dict)
