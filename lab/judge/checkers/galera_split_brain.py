"""split_brain on Galera: the time during which two or more disjoint components of the cluster
each believed it was the primary component.

Evidence: the Galera watcher (``runners.galera_watch``) reads every node's
``wsrep_cluster_status`` and the membership of its component (``wsrep_incoming_addresses``)
every 200 ms. A node is **in a primary component M** from the first sample showing ``Primary``
with membership M until the first later sample showing anything else (another membership,
not ``Primary``, unreadable) or until a fault that takes it down starts (``kill``, ``stop``,
``restart``, ``cold_restart``, ``pause``: exact, from the history); a node still so at its last
sample is so until that sample. Each change is placed at the first sample that shows it, so
each end of an interval is known to one sampling interval (200 ms). A membership that names
none of the lab's nodes is not counted.

A **split-brain window** is a maximal interval during which two primary components with
**disjoint** memberships exist at once (each seen by at least one of its members). Two
different but overlapping memberships are one component changing its view (a node leaving or
joining is seen by the nodes at slightly different moments), not a split. A majority/minority
partition without ``pc.ignore_sb`` never has one: the minority is ``non-Primary``.

Figures, as on replication (``lab.judge.checkers.split_brain``): ``count``, ``longest``, ``total``,
``writes`` (acknowledged writes completed inside a window by a node of one of its components;
``writes_by_workload``: the same per workload, what ``split_brain(W).writes`` reads),
``windows`` (``start``, ``end``, ``seconds``, ``nodes``, ``components`` (each a list of
nodes), ``writes`` per node, ``sides_writing``: how many of the components acknowledged a
write inside the window, ``open``), per node ``writable`` (seconds in a primary component that
was split from another), ``writes``, ``samples``. What the window cannot include: the time
each side took to notice the partition (Galera's ``evs.suspect_timeout`` and
``evs.inactive_timeout``): until a side installs its own view, it is still in the old,
common component, whose commits wait. docs/results.md defines the figure and its
calibration.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from lab.history import WRITE_FS, Op, Sample
from lab.judge.checkers.base import CheckContext, CheckResult, seconds
from lab.judge.checkers.split_windows import window_metrics

SERIES = "galera"
MEMBER = "member:"  # runners.galera_watch.MEMBER: a sample's key naming a component's node
DOWN_FAULTS = frozenset({"kill", "stop", "restart", "cold_restart", "pause"})

Interval = tuple[int, int]  # [start, end] ns, closed


Members = frozenset[str]
Held = tuple[int, int, Members]  # (start, end, membership): a node in a primary component


def membership(values: dict[str, float]) -> Members:
    """The nodes a sample names as members of the node's component (``member:NODE``)."""
    return frozenset(k[len(MEMBER):] for k, v in values.items()
                     if k.startswith(MEMBER) and v == 1.0)


def component_intervals(samples: Sequence[Sample], downs: Sequence[int]
                        ) -> tuple[list[Held], int]:
    """``(start, end, membership)`` intervals during which one node (its samples sorted by
    time) was in a primary component, and its number of readable samples."""
    out: list[Held] = []
    opened: tuple[int, Members] | None = None  # (start, membership)
    last: int | None = None
    n = 0
    downs = sorted(downs)

    def close(at: int) -> None:
        nonlocal opened
        if opened is not None:
            a, mask = opened
            cut = next((d for d in downs if a <= d <= at), at)
            out.append((a, cut, mask))
            opened = None

    for s in samples:
        if s.values.get("unreadable"):
            close(s.time)
            continue
        n += 1
        mask = membership(s.values)
        if s.values.get("primary") == 1.0 and mask:
            went_down = opened is not None and last is not None and any(
                last <= d <= s.time for d in downs)
            if opened is not None and (opened[1] != mask or went_down):
                close(s.time)
            if opened is None:
                opened = (s.time, mask)
            last = s.time
        else:
            close(s.time)
    if opened is not None:
        close(last if last is not None else opened[0])
    return out, n


def split_windows(intervals: Sequence[Held]) -> list[tuple[Interval, list[Members]]]:
    """The maximal intervals during which two or more primary components with disjoint
    memberships exist at once, each with the memberships that were split in it (sorted)."""
    events: list[tuple[int, int, Members]] = []  # (time, 0 open | 1 close, membership)
    for a, b, mask in intervals:
        events.append((a, 0, mask))
        events.append((b, 1, mask))
    events.sort(key=lambda e: (e[0], e[1]))
    active: dict[Members, int] = defaultdict(int)
    out: list[tuple[Interval, list[Members]]] = []
    start: int | None = None
    split: set[Members] = set()

    def disjoint() -> set[Members]:
        masks = [m for m, k in active.items() if k > 0]
        return {m for m in masks if any(not m & o for o in masks if o != m)}

    for t, kind, mask in events:
        active[mask] += 1 if kind == 0 else -1
        now = disjoint()
        if now:
            if start is None:
                start = t
            split |= now
        elif start is not None:
            if out and out[-1][0][1] >= start:  # touching: one window
                (a, _), prev = out.pop()
                out.append(((a, t), sorted(set(prev) | split, key=sorted)))
            else:
                out.append(((start, t), sorted(split, key=sorted)))
            start, split = None, set()
    return out


def check(history: Sequence[Op], ctx: CheckContext, name: str) -> CheckResult:
    samples: dict[str, list[Sample]] = defaultdict(list)
    for s in ctx.samples:
        if s.series == SERIES:
            samples[s.subject].append(s)
    if not samples:
        why = "the Galera components were not sampled (no wsrep_cluster_status samples)"
        return CheckResult(name, None, {"count": None, "longest": None, "total": None,
                                        "writes": None, "windows": [], "why": why,
                                        "topology": "galera", "subjects": {}}, why)
    t0, _ = ctx.bounds(history)
    downs: dict[str, list[int]] = defaultdict(list)
    for op in ctx.nemesis(history):
        if op.type == "invoke" and op.f in DOWN_FAULTS and op.node:
            downs[op.node].append(op.time)
    per_node: dict[str, list[Held]] = {}
    counts: dict[str, int] = {}
    for node, ss in samples.items():
        ss.sort(key=lambda s: s.time)
        per_node[node], counts[node] = component_intervals(ss, downs.get(node, []))
    found = split_windows([iv for ivs in per_node.values() for iv in ivs])
    acks: dict[str, list[tuple[int, str]]] = defaultdict(list)  # node -> (time, workload)
    for f, cs in ctx.by_f(history).items():
        if f in WRITE_FS:
            for c in cs:
                who = c.node or (c.endpoint if c.endpoint in samples else None)
                if c.type == "ok" and who and c.end is not None:
                    acks[who].append((c.end, c.workload))
    last_sample = {n: ss[-1].time for n, ss in samples.items() if ss}
    windows: list[dict[str, Any]] = []
    per_node_writes: dict[str, int] = defaultdict(int)
    by_workload: dict[str, int] = defaultdict(int)
    writable: dict[str, float] = defaultdict(float)
    for (a, b), masks in found:
        members = sorted({n for m in masks for n in m})
        w: dict[str, int] = {}
        for n in members:
            inside = [wl for t, wl in acks.get(n, []) if a <= t <= b]
            for wl in inside:
                by_workload[wl] += 1
            if inside:
                w[n] = len(inside)
        for n, k in w.items():
            per_node_writes[n] += k
        for n in members:
            writable[n] += seconds(b - a)
        sides = sum(1 for m in masks if any(w.get(n) for n in m))
        is_open = any(b >= last_sample.get(n, b + 1) for n in members)
        windows.append({"start": seconds(a - t0), "end": seconds(b - t0),
                        "seconds": seconds(b - a), "nodes": members,
                        "components": [sorted(m) for m in masks], "writes": w,
                        "sides_writing": sides, "open": is_open})
    writes_total = sum(sum(w["writes"].values()) for w in windows)
    metrics = window_metrics(
        windows, writes=writes_total, by_workload=by_workload, lower_bound=False,
        evidence="wsrep_cluster_status and membership samples", resolution=0.2,
        topology="galera",
        subjects={n: {"writable": writable.get(n, 0.0), "writes": per_node_writes.get(n, 0),
                      "samples": counts.get(n, 0)} for n in sorted(samples)})
    longest = metrics["longest"]
    note = (f"{len(windows)} split-brain window(s) of disjoint primary components, longest "
            f"{longest:.3f}s, {writes_total} acknowledged writes inside") if windows else ""
    return CheckResult(name, not windows, metrics, note)
