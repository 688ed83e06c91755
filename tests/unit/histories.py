"""Small hand-built histories for the checker tests.

Times are given in seconds (floats) from the start of the load and stored as integer ns.
``history(...)`` flattens its arguments, sorts them by time (stably) and assigns indices.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lab.history import NEMESIS, Op, OpType, Sample
from lab.judge.checkers.base import CheckContext, WorkloadInfo

S = 1_000_000_000


def ns(t: float) -> int:
    return round(t * S)


def _op(
    type: OpType,
    process: int,
    f: str,
    t: float,
    *,
    workload: str = "w",
    endpoint: str = "db1",
    node: str | None = None,
    key: int | None = None,
    value: Any = None,
    error: int | None = None,
    error_msg: str | None = None,
) -> Op:
    return Op(type, f, process, ns(t), workload, endpoint, node, key, value, error, error_msg)


def invoke_op(process: int, f: str, t: float, **kw: Any) -> Op:
    return _op("invoke", process, f, t, **kw)


def ok_op(process: int, f: str, t: float, **kw: Any) -> Op:
    return _op("ok", process, f, t, **kw)


def fail_op(process: int, f: str, t: float, **kw: Any) -> Op:
    return _op("fail", process, f, t, **kw)


def info_op(process: int, f: str, t: float, **kw: Any) -> Op:
    return _op("info", process, f, t, **kw)


def op(process: int, f: str, t0: float, t1: float, type: OpType = "ok", **kw: Any) -> list[Op]:
    """An invoke at t0 and its completion at t1. ``value``/``key`` go on both, except that a
    read's invoke carries no value; ``error``/``error_msg`` go on the completion only."""
    inv_kw = {k: v for k, v in kw.items() if k not in ("error", "error_msg")}
    if f == "read":
        inv_kw.pop("value", None)
    return [_op("invoke", process, f, t0, **inv_kw), _op(type, process, f, t1, **kw)]


def txn(
    process: int,
    t0: float,
    t1: float,
    mops: list[list[Any]],
    type: OpType = "ok",
    *,
    workload: str = "la",
    node: str | None = "db1",
    error: int | None = None,
) -> list[Op]:
    """A list_append transaction (``f = "txn"``): ``mops`` as the completion shows them
    (``[["r", key, [1, 2]], ["append", key, 3]]``). The invoke carries every read as None, and
    so does a fail or info completion (the invoked value)."""
    invoked = [[f, k, None if f == "r" else v] for f, k, v in mops]
    done = [list(m) for m in mops] if type == "ok" else invoked
    return [
        _op("invoke", process, "txn", t0, workload=workload, endpoint=node or "db1",
            value=invoked),
        _op(type, process, "txn", t1, workload=workload, endpoint=node or "db1", node=node,
            value=done, error=error),
    ]  # fmt: skip


def fault(name: str, start: float, end: float | None, node: str | None = None) -> list[Op]:
    out = [Op("invoke", name, NEMESIS, ns(start), node=node)]
    if end is not None:
        out.append(Op("ok", name, NEMESIS, ns(end), node=node))
    return out


def history(*parts: Op | Iterable[Op]) -> list[Op]:
    flat: list[Op] = []
    for p in parts:
        if isinstance(p, Op):
            flat.append(p)
        else:
            flat.extend(p)
    flat.sort(key=lambda o: o.time)
    return [
        Op(o.type, o.f, o.process, o.time, o.workload, o.endpoint, o.node, o.key, o.value,
           o.error, o.error_msg, i)
        for i, o in enumerate(flat)
    ]  # fmt: skip


def probe(
    times: Iterable[tuple[float, float, OpType]],
    *,
    process: int = 1,
    workload: str = "w",
    endpoint: str = "db1",
    f: str = "write",
    **kw: Any,
) -> list[Op]:
    """A single client doing one op after another: (invoke, completion, type) each."""
    out: list[Op] = []
    for i, (t0, t1, ty) in enumerate(times):
        out += op(process, f, t0, t1, ty, workload=workload, endpoint=endpoint, key=i, **kw)
    return out


def ctx(
    start: float = 0.0,
    end: float | None = None,
    *,
    workloads: dict[str, str] | None = None,
    final_state: dict[str, dict[str, dict[int, Any]]] | None = None,
    samples: list[Sample] | None = None,
    facts: dict[str, Any] | None = None,
) -> CheckContext:
    return CheckContext(
        workloads={k: WorkloadInfo(kind) for k, kind in (workloads or {}).items()},
        load_start=ns(start),
        load_end=ns(end) if end is not None else None,
        final_state=final_state or {},
        samples=samples or [],
        facts=facts or {},
    )
