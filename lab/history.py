"""The history of a run: every client operation and every fault, as plain records.

An operation is recorded twice: ``invoke`` when a client starts it, then exactly one of
``ok`` (it happened), ``fail`` (it definitely did not happen) or ``info`` (we do not know:
a timeout or a lost connection; a timed-out write is not a failed write). Faults are in the
same history, with ``process == NEMESIS`` and ``f`` naming the fault (``kill``, ``pause`` ...):
their invoke is the start, their ok/fail the end.

Times are monotonic nanoseconds (``time.monotonic_ns()``), comparable within one run. The
record itself (``Op``, ``Sample``, ``NEMESIS`` and the op-level constants) lives in
``runners.ops``, below the clients and faults that write it; this module re-exports it and
keeps what reads a history: pairing, fault windows, bounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runners.ops import (  # the op record, below runners/ and fault/
    CONNECT_TIMEOUT,
    DUPLICATE_KEY_CODES,
    NEMESIS,
    NOT_SENT_CODES,
    NOT_SENT_PREFIX,
    NS,
    READ_FS,
    REREAD_FS,
    WRITE_FS,
    Op,
    OpType,
    Sample,
    never_sent,
)

__all__ = [
    "CONNECT_TIMEOUT", "DUPLICATE_KEY_CODES", "NEMESIS", "NOT_SENT_CODES", "NOT_SENT_PREFIX",
    "NS", "READ_FS", "REREAD_FS", "WRITE_FS", "Completed", "FaultWindow", "Op", "OpType",
    "Paired", "Sample", "fault_windows", "never_sent", "pair_ops", "time_bounds",
]


# --- helpers over a history ------------------------------------------------------------------
#
# A history is ``list[Op]`` in recording order. Within one process, ops alternate invoke ->
# completion; across processes the order is by recording, which is by time up to the few
# nanoseconds between a client reading the clock and taking the recorder's lock. Checkers that
# need a strict time order sort (cheap: the list is already almost sorted).


class Completed:
    """One client operation, its invoke paired with its completion.

    ``type`` is the completion's type (ok, fail, info). An invoke that never completed (the
    history was cut: interrupted run, client still blocked at the end) is ``info`` with
    ``end = None`` and ``incomplete = True``: we do not know whether it happened.
    ``key``/``node`` come from the completion when it has them (an auto-increment insert learns
    its key on completion), else from the invoke. ``value`` is the completion's value when it
    has one (a read's result), else the invoke's (a write's value). ``inv``/``comp`` are the
    two records themselves.
    """

    __slots__ = (
        "type", "f", "process", "workload", "endpoint", "node", "key", "value", "start", "end",
        "error", "inv", "comp",
    )  # fmt: skip

    def __init__(self, inv: Op, comp: Op | None) -> None:
        # the hot path of every checker: one call per operation, keep it lean
        self.inv = inv
        self.comp = comp
        self.f: str = inv.f
        self.process: int = inv.process
        self.start: int = inv.time
        self.type: OpType
        self.workload: str
        self.endpoint: str
        self.node: str | None
        self.key: int | None
        self.value: Any
        self.end: int | None
        self.error: int | None
        if comp is None:
            self.type = "info"
            self.workload = inv.workload
            self.endpoint = inv.endpoint
            self.node = inv.node
            self.key = inv.key
            self.value = inv.value
            self.end = None
            self.error = None
            return
        self.type = comp.type
        self.workload = inv.workload or comp.workload
        self.endpoint = inv.endpoint or comp.endpoint
        n = comp.node
        self.node = n if n is not None else inv.node
        k = comp.key
        self.key = k if k is not None else inv.key
        v = comp.value
        self.value = v if v is not None else inv.value
        self.end = comp.time
        self.error = comp.error

    @property
    def incomplete(self) -> bool:
        return self.comp is None

    @property
    def error_msg(self) -> str | None:
        return "no completion recorded" if self.comp is None else self.comp.error_msg

    @property
    def index(self) -> int:
        """The invoke's index in the history."""
        return self.inv.index

    @property
    def latency(self) -> int | None:
        """Nanoseconds from invoke to completion, None when it never completed."""
        return None if self.end is None else self.end - self.start

    def where(self) -> str:
        """The node that answered, or the endpoint when the node is not known."""
        return self.node or self.endpoint

    def __repr__(self) -> str:
        return (
            f"Completed({self.type} {self.f} p={self.process} w={self.workload!r} "
            f"key={self.key!r} value={self.value!r} start={self.start} end={self.end} "
            f"error={self.error!r})"
        )


@dataclass(slots=True)
class Paired:
    """The client operations of a history, paired (nemesis ops are left out).

    ``ops`` is in completion-time order (stable: ties keep recording order); ops that never
    completed come last, by invoke time. ``orphans`` counts completions without a matching
    invoke (a recording bug, reported, otherwise ignored). ``faults``: the nemesis records, in
    history order (picked out on the same pass)."""

    ops: list[Completed]
    orphans: int = 0
    faults: list[Op] = field(default_factory=list)


def pair_ops(history: Sequence[Op]) -> Paired:
    """Pair every client invoke with its completion, matching by process."""
    open_: dict[int, Op] = {}
    out: list[Completed] = []
    append = out.append
    pending: list[Op] = []
    orphans = 0
    last_end = -(2**63)
    in_order = True
    faults: list[Op] = []
    for op in history:
        p = op.process
        if p == NEMESIS:
            faults.append(op)
            continue
        if op.type == "invoke":
            prev = open_.get(p)
            if prev is not None:  # the previous op of this process never completed
                pending.append(prev)
            open_[p] = op
        else:
            inv = open_.pop(p, None)
            if inv is None:
                orphans += 1
                continue
            t = op.time
            if t < last_end:
                in_order = False
            else:
                last_end = t
            append(Completed(inv, op))
    if not in_order:
        out.sort(key=_end_time)
    pending.extend(open_.values())
    pending.sort(key=lambda o: o.time)
    out.extend(Completed(inv, None) for inv in pending)
    return Paired(out, orphans, faults)


def _end_time(c: Completed) -> int:
    return c.end if c.end is not None else 0


@dataclass(frozen=True, slots=True)
class FaultWindow:
    """A fault from the history: its invoke is the start, its ok/fail the end (None: still
    active when the history ends, e.g. ``leave faults``)."""

    name: str
    node: str | None
    start: int
    end: int | None
    ok: bool | None  # None while open; False when the fault's completion was a fail
    detail: Any = None
    error_msg: str | None = None


def fault_windows(history: Sequence[Op]) -> list[FaultWindow]:
    """Pair nemesis ops by (fault name, node): faults on different nodes may overlap."""
    open_: dict[tuple[str, str | None], Op] = {}
    out: list[FaultWindow] = []
    for op in history:
        if op.process != NEMESIS:
            continue
        k = (op.f, op.node)
        if op.type == "invoke":
            prev = open_.pop(k, None)
            if prev is not None:
                out.append(FaultWindow(prev.f, prev.node, prev.time, None, None, prev.value))
            open_[k] = op
        else:
            inv = open_.pop(k, None)
            if inv is None:  # an end without a start: keep it as an instant
                out.append(
                    FaultWindow(op.f, op.node, op.time, op.time, op.type == "ok", op.value,
                                op.error_msg)
                )  # fmt: skip
                continue
            out.append(
                FaultWindow(inv.f, inv.node, inv.time, op.time, op.type == "ok",
                            inv.value if inv.value is not None else op.value, op.error_msg)
            )  # fmt: skip
    out.extend(FaultWindow(o.f, o.node, o.time, None, None, o.value) for o in open_.values())
    out.sort(key=lambda w: w.start)
    return out


def time_bounds(history: Sequence[Op]) -> tuple[int, int] | None:
    """(first, last) time over the history, None when it is empty."""
    if not history:
        return None
    lo = hi = history[0].time
    for op in history:
        t = op.time
        if t < lo:
            lo = t
        elif t > hi:
            hi = t
    return lo, hi
