"""The op record every client and every fault writes: below everything that writes it.

An operation is recorded twice: ``invoke`` when a client starts it, then exactly one of
``ok`` (it happened), ``fail`` (it definitely did not happen) or ``info`` (we do not know:
a timeout or a lost connection; a timed-out write is not a failed write). Faults are in the
same history, with ``process == NEMESIS`` and ``f`` naming the fault (``kill``, ``pause`` ...):
their invoke is the start, their ok/fail the end.

Times are monotonic nanoseconds (``time.monotonic_ns()``), comparable within one run.
``runners/`` and ``fault/`` write these records; ``lab.history`` pairs and reads them (and
re-exports every name here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

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


if not TYPE_CHECKING:
    # Frozen to mypy (strict, on every commit), not at run time: the frozen ``__init__`` sets
    # each of the 12 fields through ``object.__setattr__`` (0.95 µs an op on the bench
    # machine, on every client's hot path); plain slot stores take less than half of that.
    # Hashing and equality are the frozen dataclass's, unchanged; the recorder stamps
    # ``index`` on an op it has just been given (the only write after construction).
    # tests/unit/test_recorder.py checks this signature against the dataclass's fields.
    def _op_init(
        self, type, f, process, time, workload="", endpoint="", node=None, key=None,
        value=None, error=None, error_msg=None, index=-1,
    ):  # fmt: skip
        self.type = type
        self.f = f
        self.process = process
        self.time = time
        self.workload = workload
        self.endpoint = endpoint
        self.node = node
        self.key = key
        self.value = value
        self.error = error
        self.error_msg = error_msg
        self.index = index

    _op_init.__qualname__ = "Op.__init__"
    Op.__init__ = _op_init
    del Op.__setattr__, Op.__delattr__


@dataclass(slots=True)
class Sample:
    """A per-second or periodic measurement that is not an operation: replication lag,
    sysbench interval rows, page-cache size.

    Series the checkers read (values in base units: seconds, per second):

    - ``lag``: subject = replica node, ``{"lag": seconds}`` (NaN or missing: unreadable);
    - ``sysbench``: subject = workload, ``{"tps", "qps", "lat_p95" (seconds), "errors"
      (per second), "reconnects" (per second)}``, one per ``--report-interval=1`` line.
    """

    series: str  # "lag", "sysbench", ...
    subject: str  # node or workload
    time: int  # monotonic ns
    values: dict[str, float] = field(default_factory=dict)


DUPLICATE_KEY_CODES: frozenset[int] = frozenset({1062, 11000})  # MySQL/MariaDB, MongoDB
# A failed op whose message starts with NOT_SENT_PREFIX never reached the server: the
# connection could not be opened (refused, too many connections, access denied, lost during
# the handshake, or no connection within the workload's timeout). Such a write was not
# attempted, so it can never be "reported failed but committed". NOT_SENT_CODES are the codes
# that can only happen before a statement is sent.
NOT_SENT_PREFIX = "not sent: "
CONNECT_TIMEOUT = -2003  # the lab's own code: no connection within the workload's timeout
NOT_SENT_CODES: frozenset[int] = frozenset(
    {2002, 2003, 2005, 1040, 1045, 1129, 1130, 1203, CONNECT_TIMEOUT}
)


def never_sent(error: int | None, error_msg: str | None) -> bool:
    """A failed operation that never reached the server."""
    return (error is not None and error in NOT_SENT_CODES) or bool(
        error_msg and error_msg.startswith(NOT_SENT_PREFIX))
WRITE_FS: frozenset[str] = frozenset({"write", "insert"})
READ_FS: frozenset[str] = frozenset({"read"})
# read_your_writes reads each acknowledged write on every read endpoint at once ("read":
# counted for stale reads), then polls the keys it has not seen yet ("poll", value
# [[key, version or None], ...]): used for visibility only, never counted as stale reads nor
# as the workload's throughput. "reread" is the single-key poll of histories stored by
# earlier versions.
REREAD_FS: frozenset[str] = frozenset({"reread", "poll"})
NS = 1_000_000_000
