"""split_brain: the time during which two or more nodes took writes as primaries at once.

A node is **writable** at a moment when either evidence says so:

- **its state**: the replication watcher (``runners.replication_watch``, every 200 ms) reads
  ``@@global.read_only``. A node is writable from the first sample showing ``read_only = 0``
  until the first later sample showing ``read_only = 1`` or the node unreadable (down, paused),
  or until a fault that takes it down starts (``kill``, ``stop``, ``restart``,
  ``cold_restart``, ``pause``: exact, from the history). Each change is placed at the first
  sample that shows it, so each end of an interval is known to one sampling interval (200 ms);
  a node still writable at its last sample is writable until that sample;
- **its writes**: acknowledged writes answered by the node (the history's ``node``; a
  workload that targets a node by name counts its writes there). A run of acknowledged writes
  on one node, not interrupted by a write on that node that was refused or went unanswered,
  is a span from its first to its last acknowledgement (exact: the completion times).
  Refusals that do not mean "not taking writes" do not interrupt it: duplicate keys
  (1062), deadlocks (1213), lock wait timeouts (1205).

A **split-brain window** is a maximal interval during which two or more nodes are writable.
Figures: ``count`` (windows), ``longest`` and ``total`` (seconds), ``writes`` (acknowledged
writes completed inside a window, on any node), ``windows`` (each with ``start``/``end`` in
seconds since the start of the load, ``nodes``, ``writes`` per node, ``open`` when it was
still open at the last evidence), and per node (``subjects``): ``writable`` (seconds),
``writes`` (its acknowledged writes inside windows), ``samples`` (read_only samples).

Which topologies: ``replication`` (one primary; a promote that leaves the old primary
writable, a replica made writable, an old primary that comes back writable) and ``single``
(always 0: one node). On ``galera`` every node takes writes: split brain there means two
components of the cluster that each believe they are the primary component, measured from
samples of ``wsrep_cluster_status`` (``lab.judge.checkers.galera_split_brain``). On
``primary_primary`` every primary takes writes by design: **unknown** (None), never 0; so is
a replication run whose ``read_only`` was never sampled and whose writes name no node.
When ``read_only`` was not sampled but writes name their nodes, the figures come from the
writes alone and are lower bounds (``lower_bound``: a node may be writable without a write).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dsl.metrics import SPLIT_BRAIN_UNDEFINED
from lab.history import DUPLICATE_KEY_CODES, WRITE_FS, Op, Sample
from lab.judge.checkers import galera_split_brain
from lab.judge.checkers.base import CheckContext, CheckResult, seconds
from lab.judge.checkers.columns import I32, I64, Columns
from lab.judge.checkers.split_windows import window_metrics

NAME = "split_brain"
SERIES = "replication"
DOWN_FAULTS = frozenset({"kill", "stop", "restart", "cold_restart", "pause"})
NOT_REFUSALS = DUPLICATE_KEY_CODES | {1213, 1205}
UNDEFINED_TOPOLOGIES = SPLIT_BRAIN_UNDEFINED  # lab check refuses expectations there too

Interval = tuple[int, int]  # [start, end] ns, closed


@dataclass(slots=True)
class _Node:
    by_state: list[Interval] = field(default_factory=list)
    by_writes: list[Interval] = field(default_factory=list)
    samples: int = 0
    writable_at_end: bool = False
    # its acknowledged writes: completion times in time order, and their workloads (codes)
    ack_t: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    ack_w: I32 = field(default_factory=lambda: np.zeros(0, np.int32))


def merge(intervals: Sequence[Interval]) -> list[Interval]:
    """Overlapping or touching closed intervals joined."""
    out: list[Interval] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def overlaps(per_node: dict[str, list[Interval]]) -> list[tuple[Interval, list[str]]]:
    """The maximal intervals during which two or more nodes' intervals overlap, each with the
    nodes writable during it. Closed intervals: a single acknowledgement on one node while
    another is writable is a window of length 0."""
    events: list[tuple[int, int, str]] = []  # (time, 0 open | 1 close, node)
    for node, ivs in per_node.items():
        for a, b in merge(ivs):
            events.append((a, 0, node))
            events.append((b, 1, node))
    events.sort()
    active: dict[str, int] = defaultdict(int)
    out: list[tuple[Interval, list[str]]] = []
    start: int | None = None
    nodes: set[str] = set()
    for t, kind, node in events:
        if kind == 0:
            active[node] += 1
            if sum(1 for v in active.values() if v > 0) >= 2:
                if start is None:
                    start = t
                nodes.update(n for n, v in active.items() if v > 0)
        else:
            active[node] -= 1
            if start is not None and sum(1 for v in active.values() if v > 0) < 2:
                if out and out[-1][0][1] >= start:  # touching: one window
                    (a, _), prev = out.pop()
                    out.append(((a, t), sorted(set(prev) | nodes)))
                else:
                    out.append(((start, t), sorted(nodes)))
                start, nodes = None, set()
    return out


def _state_intervals(samples: list[Sample], downs: list[int]
                     ) -> tuple[list[Interval], int, bool]:
    """Writable intervals of one node from its read_only samples (sorted by time) and the
    start times of faults that took it down; the number of read_only samples; whether the
    node was still writable at its last sample."""
    out: list[Interval] = []
    opened: int | None = None
    last: int | None = None
    n = 0
    downs = sorted(downs)

    def close(at: int) -> None:
        nonlocal opened
        if opened is not None:
            cut = next((d for d in downs if opened <= d <= at), at)
            out.append((opened, cut))
            opened = None

    for s in samples:
        if s.values.get("unreadable"):
            close(s.time)
            continue
        ro = s.values.get("read_only")
        if ro is None:
            continue  # no information (an older watcher)
        n += 1
        if ro == 0.0:
            if opened is not None and any(last is not None and last <= d <= s.time
                                          for d in downs):
                close(s.time)  # went down and came back writable between two samples
            if opened is None:
                opened = s.time
            last = s.time
        else:
            close(s.time)
    still = opened is not None
    if opened is not None:
        close(last if last is not None else opened)
    return out, n, still


def _node_of(op_node: str | None, endpoint: str, nodes: set[str]) -> str | None:
    if op_node:
        return op_node
    return endpoint if endpoint in nodes else None


def _write_spans(events: list[tuple[int, bool]]) -> list[Interval]:
    """Spans of acknowledgements (True) not interrupted by a refusal (False)."""
    out: list[Interval] = []
    first: int | None = None
    last: int | None = None
    for t, ok in sorted(events):
        if ok:
            if first is None:
                first = t
            last = t
        else:
            if first is not None and last is not None:
                out.append((first, last))
            first = last = None
    if first is not None and last is not None:
        out.append((first, last))
    return out


def _writes(col: Columns, known: set[str]) -> dict[str, tuple[I64, I32, list[Interval]]]:
    """Per node, its acknowledged writes (completion times in time order, their workloads) and
    the spans of acknowledgements not interrupted by a refusal. A write counts on the node
    that answered it, else on its endpoint when that is a node; a refusal is a failed or
    unknown write whose error is not one of ``NOT_REFUSALS``."""
    sel = col.of_f(sorted(WRITE_FS))
    sel = sel[sel < col.n_done]
    node = col.node[sel]
    truthy = np.array([bool(n) for n in col.names], np.bool_)
    at_ep = np.array([n in known for n in col.names], np.bool_)
    ep = col.endpoint[sel]
    where = np.where(truthy[node], node, np.where(at_ep[ep], ep, -1))
    ok = col.ok[sel]
    bad = np.flatnonzero(~ok)
    refused = np.zeros(len(sel), np.bool_)
    refused[bad] = [e not in NOT_REFUSALS for e in col.errors(sel[bad])]
    keep = (where >= 0) & (ok | refused)
    sel, where, ok = sel[keep], where[keep], ok[keep]
    out: dict[str, tuple[I64, I32, list[Interval]]] = {}
    if not len(sel):
        return out
    t = col.end[sel]
    order = np.argsort(where, kind="stable")
    cuts = np.flatnonzero(np.diff(where[order])) + 1
    for part in np.split(order, cuts):
        name = col.name(int(where[part[0]]))
        pt, pok = t[part], ok[part]
        acks = part[pok]
        ao = np.argsort(t[acks], kind="stable")
        # the events in (time, refusal first) order; spans: the runs of acknowledgements
        o = np.lexsort((pok, pt))
        st, sok = pt[o], pok[o]
        prev = np.concatenate([[False], sok[:-1]])
        nxt = np.concatenate([sok[1:], [False]])
        first = np.flatnonzero(sok & ~prev)
        last = np.flatnonzero(sok & ~nxt)
        spans = list(zip(st[first].tolist(), st[last].tolist(), strict=True))
        out[name] = (t[acks][ao], col.workload[sel[acks]][ao], spans)
    return out


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    topology = ctx.facts.get("topology")
    if topology == "galera":  # two disjoint primary components (wsrep_cluster_status)
        return galera_split_brain.check(history, ctx, NAME)
    if topology in UNDEFINED_TOPOLOGIES:
        return _unknown(UNDEFINED_TOPOLOGIES[str(topology)], topology)
    if topology == "single":
        return _zero("one node: no second primary")
    t0, _ = ctx.bounds(history)
    samples: dict[str, list[Sample]] = defaultdict(list)
    for s in ctx.samples:
        if s.series == SERIES:
            samples[s.subject].append(s)
    known_nodes: set[str] = set(samples)
    col = ctx.columns(history)
    known_nodes |= {n for n in col.client_nodes if n}
    downs: dict[str, list[int]] = defaultdict(list)
    for op in ctx.nemesis(history):
        if op.type == "invoke" and op.f in DOWN_FAULTS and op.node:
            downs[op.node].append(op.time)
            known_nodes.add(op.node)
    nodes: dict[str, _Node] = defaultdict(_Node)
    for name, ss in samples.items():
        ss.sort(key=lambda s: s.time)
        ivs, n, still = _state_intervals(ss, downs.get(name, []))
        nodes[name].by_state = ivs
        nodes[name].samples = n
        nodes[name].writable_at_end = still
    for name, (ack_t, ack_w, spans) in _writes(col, known_nodes).items():
        nodes[name].ack_t, nodes[name].ack_w = ack_t, ack_w
        nodes[name].by_writes = spans

    sampled = any(n.samples for n in nodes.values())
    attributed = any(len(n.ack_t) for n in nodes.values())
    if not sampled and not attributed:
        return _unknown("no read_only samples and no write names the node that answered it",
                        topology)
    per_node = {name: n.by_state + n.by_writes for name, n in nodes.items()}
    found = overlaps(per_node)
    # the last window is still open when two or more nodes were writable at their last sample
    open_at_end = sum(1 for n in nodes.values() if n.writable_at_end) >= 2
    windows: list[dict[str, Any]] = []
    writes_total = 0
    per_node_writes: dict[str, int] = defaultdict(int)
    by_workload: dict[str, int] = defaultdict(int)
    for i, ((a, b), members) in enumerate(found):
        w: dict[str, int] = {}
        for name in members:
            nd = nodes[name]
            lo = int(np.searchsorted(nd.ack_t, a, side="left"))
            hi = int(np.searchsorted(nd.ack_t, b, side="right"))
            inside = nd.ack_w[lo:hi]
            codes, counts = np.unique(inside, return_counts=True)
            for code, m in zip(codes.tolist(), counts.tolist(), strict=True):
                by_workload[col.name(code)] += m
            k = len(inside)
            if k:
                w[name] = k
                per_node_writes[name] += k
        writes_total += sum(w.values())
        is_open = open_at_end and i == len(found) - 1
        windows.append({"start": seconds(a - t0), "end": seconds(b - t0),
                        "seconds": seconds(b - a), "nodes": members, "writes": w,
                        "open": is_open})
    subjects: dict[str, dict[str, Any]] = {}
    for name, node_ev in sorted(nodes.items()):
        merged = merge(per_node[name])
        subjects[name] = {
            "writable": sum(seconds(b - a) for a, b in merged),
            "writes": per_node_writes.get(name, 0),
            "samples": node_ev.samples,
        }
    metrics = window_metrics(
        windows, writes=writes_total, by_workload=by_workload, lower_bound=not sampled,
        evidence="read_only samples and writes" if sampled and attributed
        else ("read_only samples" if sampled else "writes only"),
        resolution=0.2 if sampled else 0.0, topology=topology, subjects=subjects)
    longest = metrics["longest"]
    notes: list[str] = []
    if windows:
        notes.append(f"{len(windows)} split-brain window(s), longest {longest:.3f}s, "
                     f"{writes_total} acknowledged writes inside")
    if not sampled:
        notes.append("read_only was not sampled: from the writes alone (a lower bound)")
    return CheckResult(NAME, not windows if sampled else (False if windows else None),
                       metrics, "; ".join(notes))


def _unknown(why: str, topology: Any) -> CheckResult:
    return CheckResult(NAME, None, {"count": None, "longest": None, "total": None,
                                    "writes": None, "windows": [], "why": why,
                                    "topology": topology, "subjects": {}}, why)


def _zero(why: str) -> CheckResult:
    return CheckResult(NAME, True, {"count": 0, "longest": 0.0, "total": 0.0, "writes": 0,
                                    "windows": [], "why": why, "subjects": {}}, why)
