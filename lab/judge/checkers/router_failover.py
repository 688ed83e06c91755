"""router_failover: how the router moved the writes off a node that failed, in phases, from
the router's own state (``runners.router_watch``: which nodes its writer backend routes to,
sampled every 50 ms) and from what the clients saw.

The writer at a sample is the first node, in topology order, that the router routes writes to
(HAProxy's ``balance first``; ProxySQL's writer hostgroup, one node with Galera's
``max_writers 1``). The *fault* is the first nemesis operation (invoke) on the node that was the
writer at that moment, other than a recovery, wait or promote (kill, pause, stop, restart, a
network fault, and also ``set global`` and ``execute``: a ``wsrep_reject_queries = ALL`` makes a
Galera node refuse every query). A ``promote`` is the lab moving the writer itself, which the
``failover`` metric measures; here the router does it on its own. In seconds from the fault:

- ``detected``: the first sample in which the router no longer routes writes to the old writer
  (ProxySQL: SHUNNED, OFFLINE, or moved out of the writer hostgroup by its monitor; HAProxy:
  DOWN after its checks);
- ``switched``: the first sample in which another node is the writer (ProxySQL: the backup
  writer in the writer hostgroup; HAProxy: the next server up);
- ``accepted``: the first write through ``router.writer`` answered ``ok`` by another node
  (the completion's time);
- ``old_writer``, ``new_writer``: the nodes. ``samples``: how many router samples were read;
  ``workloads[w]``: ``accepted`` of each writing workload through the router.

Resolution: the sampling interval (50 ms, plus one admin query) for ``detected`` and
``switched``; the workload's interval for ``accepted``. A phase that did not happen before the
end of the load is None (unknown), never a guess; so is every phase when no fault hit the
router's writer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lab.history import NS, WRITE_FS, Op
from lab.judge.checkers.base import CheckContext, CheckResult

NAME = "router_failover"
SERIES = "router"  # runners.router_watch.SERIES
RESOLUTION = 0.05
NOT_A_FAULT: frozenset[str] = frozenset({
    "resume", "start", "heal", "promote", "sleep", "drop_caches", "start_replication",
})  # fmt: skip


def _writer(values: dict[str, float]) -> str | None:
    up = [(rank, key[3:]) for key, rank in values.items() if key.startswith("up:")]
    return min(up)[1] if up else None


def _routes_to(values: dict[str, float], node: str) -> bool:
    return f"up:{node}" in values


def _nodes(invoke: Op, later: Sequence[Op]) -> list[str]:
    """The nodes a nemesis operation addressed: its node, or (``set global`` on several nodes)
    the ``nodes`` its completion lists."""
    if invoke.node is not None:
        return [invoke.node]
    done = next((o for o in later if o.f == invoke.f and o.type != "invoke"), None)
    value = done.value if done is not None and isinstance(done.value, dict) else {}
    nodes = value.get("nodes")
    return [str(n) for n in nodes] if isinstance(nodes, list) else []


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    samples = sorted((s for s in ctx.samples if s.series == SERIES), key=lambda s: s.time)
    samples = [s for s in samples if "unreadable" not in s.values]
    if not samples:
        return CheckResult(NAME, True, {"samples": 0},
                           "no router in front of the nodes (or its state was never read)")
    t0, load_end = ctx.bounds(history)
    fault: Op | None = None
    old: str | None = None
    nemesis = ctx.nemesis(history)
    for i, op in enumerate(nemesis):
        if op.type != "invoke" or op.f in NOT_A_FAULT or op.f.startswith("wait"):
            continue
        before = [s for s in samples if s.time <= op.time]
        writer = _writer(before[-1].values) if before else None
        if writer is not None and writer in _nodes(op, nemesis[i + 1:]):
            fault, old = op, writer
            break
    metrics: dict[str, Any] = {"samples": len(samples), "old_writer": old, "new_writer": None,
                               "fault": fault.f if fault else None, "fault_at": None,
                               "detected": None, "switched": None, "accepted": None}
    if fault is None or old is None:
        return CheckResult(NAME, True, metrics, "no fault hit the router's writer")

    def rel(t: int) -> float:
        return round((t - fault.time) / NS, 6)

    metrics["fault_at"] = round((fault.time - t0) / NS, 6)
    after = [s for s in samples if s.time >= fault.time]
    detected = next((s for s in after if not _routes_to(s.values, old)), None)
    switched = next((s for s in after
                     if (w := _writer(s.values)) is not None and w != old), None)
    if detected is not None:
        metrics["detected"] = rel(detected.time)
    if switched is not None:
        metrics["switched"] = rel(switched.time)
        metrics["new_writer"] = _writer(switched.values)
    per: dict[str, Any] = {}
    for c in ctx.paired(history).ops:  # completion order
        if (c.f in WRITE_FS and c.type == "ok" and c.endpoint == "router.writer"
                and c.end is not None and fault.time <= c.end <= load_end
                and c.node not in (None, old) and c.workload not in per):
            per[c.workload] = {"accepted": rel(c.end), "node": c.node}
    metrics["workloads"] = per
    if per:
        first = min(per.values(), key=lambda v: v["accepted"])
        metrics["accepted"] = first["accepted"]
        metrics["new_writer"] = metrics["new_writer"] or first["node"]
    metrics["resolution"] = RESOLUTION
    return CheckResult(NAME, True, metrics, f"{fault.f} of {old} at {metrics['fault_at']} s; "
                       "evidence: the router's writer-backend samples and the writes through "
                       "router.writer")
