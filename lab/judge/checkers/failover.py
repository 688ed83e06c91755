"""failover: the phases of every ``promote``, measured from what the clients observed.

The lab's own timeline (when it killed the primary, when it called the promote) says what the
lab did, not what the system did. For every ``promote`` fault that completed ``ok`` with
``{"old_primary", "new_primary"}`` in its value, the *fault* is the last disruptive nemesis
invoke on the old primary before the promote began (kill, stop, pause, restart, partition,
link_down, latency, a disk fault ...; waits, sleeps, resume, start, heal and the like are not
disruptions). Without one (a planned switchover) the promote's invoke is the reference and
``fault`` is None. From the client operations of the writing operations (``write``,
``insert``), all in seconds from the fault (``x``) and since the start of the load (``x_at``):

- ``last_ok_before``: the last ``ok`` write completion (any workload) at or before the fault;
- ``first_failure``: the first write that did not complete ``ok`` among those that completed
  after the fault (an operation in flight when the fault hit counts: its failure is the first
  thing a client saw) and before the next failover's fault; its completion time. Operations
  that never completed have no time and are left out;
- ``new_writer_accepts``: the first ``ok`` write completion after the fault answered by the new
  primary (``node`` of the completion);
- ``router_switch``: the first ``ok`` operation (any kind) after the fault through a
  ``router.*`` endpoint answered by the new primary; router endpoints whose last answer before
  the fault already came from the new primary (a reader that was routed there all along) are
  left out. None when no router endpoint is in use (``router`` false);
- per endpoint used by writes (``endpoints``): ``failures`` after the fault, ``last_ok``
  (the last ``ok`` the clients of that endpoint saw before the outage: at or before the fault
  when nothing failed, otherwise at or before the first failure's completion), ``recovered``
  (the first ``ok`` completion of an operation invoked after the first failure was seen; an
  operation that was in flight through the outage does not count, so that an ``ok`` the dying
  server sent just before it died does not close the outage; without a failure, the first
  ``ok`` after the fault) and ``outage`` = recovered - last_ok, the outage that endpoint's
  clients saw. Never recovered: ``recovered``
  and ``outage`` are None (unknown), ``open_at_end`` true and ``outage_lower_bound`` = end of
  the load - last_ok;
- per workload (``workloads``) and over every endpoint (the top-level figures): the worst of
  the endpoints that had worked before the fault: the latest ``recovered``, the longest
  ``outage``, the earliest ``first_failure``; None as soon as one endpoint never recovered;
- ``lab_promote_started`` and ``lab_promote_call_seconds``: the lab's own promote call (invoke
  to ok), kept for reference; it is not a phase of the system.

A duplicate-key error (1062, 11000) is an answer from a working server: for the outage edges
it counts as an ``ok`` (as in ``downtime``), but it is not a write the new primary
*accepted*. Anything not observed is None, never a guess.
Resolution: that of the workloads' operations (their rate and timeout).

Metrics: the first failover's figures at the top level, ``count`` (promotes measured),
``failovers`` (every one, in order) and ``subjects[<new primary>]`` (the second promote of the
same node is ``"<node>#2"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lab.history import DUPLICATE_KEY_CODES, NS, WRITE_FS, Completed, Op
from lab.judge.checkers.base import CheckContext, CheckResult

NAME = "failover"
MAX_FAILOVERS = 100
# nemesis ops on the old primary that do not take it away
NOT_DISRUPTIVE: frozenset[str] = frozenset({
    "resume", "start", "heal", "promote", "sleep", "drop_caches", "start_replication",
    "stop_replication", "sql", "set_global",
})  # fmt: skip


def _is_disruption(op: Op) -> bool:
    return not (op.f in NOT_DISRUPTIVE or op.f.startswith("wait"))


def _answered(c: Completed) -> bool:
    """The server answered: ok, or a duplicate-key refusal."""
    return c.type == "ok" or (c.error is not None and c.error in DUPLICATE_KEY_CODES)


def _label(c: Completed) -> str:
    if c.error is not None:
        return str(c.error)
    return "timeout" if c.type == "info" else "fail"


class _Clock:
    """Seconds from the fault and since the load start."""

    __slots__ = ("fault", "t0")

    def __init__(self, fault: int, t0: int) -> None:
        self.fault = fault
        self.t0 = t0

    def rel(self, t: int | None) -> float | None:
        return None if t is None else round((t - self.fault) / NS, 6)

    def at(self, t: int | None) -> float | None:
        return None if t is None else round((t - self.t0) / NS, 6)

    def put(self, out: dict[str, Any], name: str, t: int | None) -> None:
        out[name] = self.rel(t)
        out[f"{name}_at"] = self.at(t)


def _endpoint(ops: Sequence[Completed], fault: int, cap: int | None, load_end: int,
              clock: _Clock) -> dict[str, Any]:  # fmt: skip
    """One endpoint's view of the failover; ``ops`` are its writes in completion order."""
    failed = [c for c in ops
              if c.end is not None and not _answered(c) and c.end >= fault
              and (cap is None or c.end < cap)]  # fmt: skip
    first_fail = min(failed, key=lambda c: c.end or 0) if failed else None
    last_ok: int | None = None
    recovered: int | None = None
    if first_fail is None:
        for c in ops:
            if c.end is None or not _answered(c):
                continue
            if c.end <= fault:
                last_ok = c.end
            elif recovered is None:
                recovered = c.end
    else:
        seen = first_fail.end
        assert seen is not None
        for c in ops:
            if c.end is None or not _answered(c):
                continue
            if c.end <= seen:
                last_ok = c.end if last_ok is None else max(last_ok, c.end)
            elif c.start >= seen and (recovered is None or c.end < recovered):
                recovered = c.end
    out: dict[str, Any] = {"failures": len(failed)}
    clock.put(out, "last_ok", last_ok)
    clock.put(out, "first_failure", first_fail.end if first_fail else None)
    out["first_failure_error"] = _label(first_fail) if first_fail else None
    clock.put(out, "recovered", recovered)
    out["worked_before"] = last_ok is not None
    if recovered is not None and last_ok is not None:
        out["outage"] = round((recovered - last_ok) / NS, 6)
        out["outage_lower_bound"] = None
    else:
        out["outage"] = None
        out["outage_lower_bound"] = (
            round((max(load_end, last_ok) - last_ok) / NS, 6)
            if recovered is None and last_ok is not None
            else None
        )
    out["open_at_end"] = recovered is None
    out["recovered_lower_bound"] = (
        round(max(0, load_end - fault) / NS, 6) if recovered is None else None
    )
    return out


def _worst(per: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate endpoints that worked before the fault: latest recovery, longest outage,
    earliest first failure; unknown as soon as one of them never recovered."""
    eps = [e for e in per if e["worked_before"]]
    out: dict[str, Any] = {"endpoints_counted": len(eps)}
    fails = [e for e in eps if e["first_failure"] is not None]
    first = min(fails, key=lambda e: e["first_failure"], default=None)
    for k in ("first_failure", "first_failure_at", "first_failure_error"):
        out[k] = first[k] if first else None
    out["failures"] = sum(e["failures"] for e in eps)
    never = [e for e in eps if e["recovered"] is None]
    if not eps:
        out.update(recovered=None, recovered_at=None, outage=None, outage_lower_bound=None,
                   open_at_end=False, recovered_lower_bound=None)  # fmt: skip
        return out
    if never:
        out.update(recovered=None, recovered_at=None, outage=None, open_at_end=True)
        bounds = [e["outage_lower_bound"] for e in never if e["outage_lower_bound"] is not None]
        out["outage_lower_bound"] = max(bounds) if bounds else None
        out["recovered_lower_bound"] = max(e["recovered_lower_bound"] for e in never)
        return out
    last = max(eps, key=lambda e: e["recovered"])
    out["recovered"], out["recovered_at"] = last["recovered"], last["recovered_at"]
    out["outage"] = max(e["outage"] for e in eps)
    out["outage_lower_bound"] = None
    out["recovered_lower_bound"] = None
    out["open_at_end"] = False
    return out


def _promotes(faults: Sequence[Op]) -> list[tuple[Op, Op | None, Op | None]]:
    """(promote ok, its invoke, the fault on the old primary) for every successful promote,
    from the faults' records (``ctx.nemesis``: the history's, in its order)."""
    out: list[tuple[Op, Op | None, Op | None]] = []
    prev_done = -(2**63)
    for i, op in enumerate(faults):
        if op.f != "promote" or op.type != "ok":
            continue
        inv = next((s for s in reversed(faults[:i])
                    if s.f == "promote" and s.type == "invoke" and s.node == op.node), None)
        value = op.value if isinstance(op.value, dict) else {}
        old = value.get("old_primary")
        before = inv.time if inv is not None else op.time
        fault = None
        if old is not None:
            fault = next((s for s in reversed(faults[:i])
                          if s.type == "invoke" and s.node == old and s.time <= before
                          and s.time > prev_done and _is_disruption(s)), None)  # fmt: skip
        if isinstance(op.value, dict) and value.get("new_primary") is not None:
            out.append((op, inv, fault))
        prev_done = op.time
    return out


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    t0, load_end = ctx.bounds(history)
    promotes = _promotes(ctx.nemesis(history))
    if not promotes:
        return CheckResult(NAME, True, {"count": 0, "failovers": [], "subjects": {}},
                           "no promote in the history")  # fmt: skip
    ops = ctx.paired(history).ops  # completion order
    writes = [c for c in ops if c.f in WRITE_FS]
    by_ep: dict[str, list[Completed]] = {}
    ep_workloads: dict[str, set[str]] = {}
    for c in writes:
        by_ep.setdefault(c.endpoint, []).append(c)
        ep_workloads.setdefault(c.endpoint, set()).add(c.workload)
    routers: dict[str, list[Completed]] = {}
    for c in ops:
        if c.endpoint.startswith("router."):
            routers.setdefault(c.endpoint, []).append(c)

    refs = [(f.time if f is not None else (inv.time if inv is not None else op.time))
            for op, inv, f in promotes]  # fmt: skip
    failovers: list[dict[str, Any]] = []
    notes: list[str] = []
    for i, (op, inv, fault) in enumerate(promotes):
        ref = refs[i]
        cap = refs[i + 1] if i + 1 < len(refs) else None
        clock = _Clock(ref, t0)
        new = str(op.value["new_primary"])
        rec: dict[str, Any] = {
            "index": i,
            "old_primary": op.value.get("old_primary"),
            "new_primary": new,
            "fault": fault.f if fault is not None else None,
            "fault_node": fault.node if fault is not None else None,
            "reference": "fault" if fault is not None else "promote",
            "fault_at": clock.at(ref),
        }
        last_before = max((c.end for c in writes if c.end is not None and c.type == "ok"
                           and c.end <= ref), default=None)  # fmt: skip
        clock.put(rec, "last_ok_before", last_before)
        accepts = min((c.end for c in writes if c.type == "ok" and c.node == new
                       and c.end is not None and c.end > ref), default=None)  # fmt: skip
        clock.put(rec, "new_writer_accepts", accepts)

        per_router: dict[str, dict[str, Any]] = {}
        switches: list[int] = []
        for ep, rops in sorted(routers.items()):
            answered_before = [c for c in rops if c.type == "ok" and c.end is not None
                               and c.end <= ref and c.node is not None]  # fmt: skip
            if answered_before and answered_before[-1].node == new:
                continue  # it was routed to the new primary all along
            switch = min((c.end for c in rops if c.type == "ok" and c.node == new
                          and c.end is not None and c.end > ref), default=None)  # fmt: skip
            per_router[ep] = {}
            clock.put(per_router[ep], "switch", switch)
            if switch is not None:
                switches.append(switch)
        rec["router"] = bool(routers)
        clock.put(rec, "router_switch", min(switches) if switches else None)
        rec["routers"] = per_router

        endpoints = {
            ep: _endpoint(eops, ref, cap, load_end, clock) for ep, eops in sorted(by_ep.items())
        }
        for ep, e in endpoints.items():
            e["workloads"] = sorted(ep_workloads[ep])
        # clients pinned to the old primary by name do not fail over (their recovery is the
        # old node's return, even a split-brain write to it): the failover's own figure is
        # that of the endpoints that can follow the writer, when any worked before
        old = rec["old_primary"]
        pinned = [ep for ep in endpoints if old is not None and ep == old]
        following = [e for ep, e in endpoints.items() if ep not in pinned]
        counted = following if any(e["worked_before"] for e in following) else \
            list(endpoints.values())
        overall = _worst(counted)
        rec.update({k: v for k, v in overall.items() if k != "endpoints_counted"})
        rec["pinned_to_old_primary"] = [ep for ep in pinned if counted is following]
        rec["endpoints"] = endpoints
        workloads: dict[str, dict[str, Any]] = {}
        for w in sorted({w for ws in ep_workloads.values() for w in ws}):
            eps = sorted(ep for ep in by_ep if w in ep_workloads[ep])
            agg = _worst(_endpoint([c for c in by_ep[ep] if c.workload == w], ref, cap,
                                   load_end, clock) for ep in eps)  # fmt: skip
            agg["endpoints"] = eps
            workloads[w] = agg
        rec["workloads"] = workloads

        rec["lab_promote_started"] = clock.rel(inv.time) if inv is not None else None
        rec["lab_promote_call_seconds"] = (
            round((op.time - inv.time) / NS, 6) if inv is not None else None
        )
        if fault is None:
            notes.append(f"promote {new}: no fault on the old primary before it; phases are "
                         "measured from the promote's start")  # fmt: skip
        if rec["open_at_end"]:
            notes.append(f"promote {new}: a writing endpoint never recovered")
        if not writes:
            notes.append(f"promote {new}: no writes recorded, phases unknown")
        failovers.append(rec)

    subjects: dict[str, dict[str, Any]] = {}
    for rec in failovers[:MAX_FAILOVERS]:
        key = rec["new_primary"]
        n = 2
        while key in subjects:
            key = f"{rec['new_primary']}#{n}"
            n += 1
        subjects[key] = rec
    first = failovers[0]
    metrics: dict[str, Any] = {
        k: v for k, v in first.items() if k not in ("endpoints", "workloads", "routers")
    }
    metrics["count"] = len(failovers)
    metrics["failovers"] = failovers[:MAX_FAILOVERS]
    metrics["subjects"] = subjects
    return CheckResult(NAME, True, metrics, "; ".join(notes))
