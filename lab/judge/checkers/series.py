"""Per-second completed operations per workload, shared by throughput, stalls and warmup.

Second ``s`` is the interval [s, s+1) seconds after the start of the load. For operation-based
workloads it counts the ``ok`` operations completed in it: the workload's unit of work, so the
polls of ``read_your_writes`` (how it waits for visibility) never count, and a
``read_your_writes`` workload counts its acknowledged writes (its reads follow each write).
For sysbench (no operations, only ``Sample(series="sysbench", subject=<workload>,
values={"tps", "qps", "lat_p95", "errors", "reconnects"})`` rows, one per
``--report-interval=1`` line; ``lat_p95`` in seconds, errors and reconnects per second) it is
the ``tps`` of the row whose interval ends in (s, s+1].

A workload's *active window* runs from its first invoke (first sysbench interval) to its last
completion (last interval), within the load (a sysbench that gave up before its end,
``ctx.facts["workload_exits"]``: to the end of the load, its seconds after dying zero); a
workload that started (ended) less than a second after the start (before the end) of the load
is taken to span the whole load. Only whole seconds inside the active window count for stalls.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from lab.history import NS, REREAD_FS, WRITE_FS, Op, Sample
from lab.judge.checkers.base import CheckContext

SYSBENCH = "sysbench"
EDGE_S = 1.0


@dataclass(slots=True)
class Series:
    workload: str
    source: str  # "ops" or "sysbench"
    per_second: list[float]  # index s: second [s, s+1) of the load
    active_start: float  # seconds since load start
    active_end: float
    total: float  # ok ops completed during the load (sysbench: sum of per-second tps)
    samples: list[Sample] = field(default_factory=list)  # sysbench rows

    def full_seconds(self) -> range:
        """Seconds entirely inside the active window."""
        lo = max(0, math.ceil(self.active_start - 1e-9))
        hi = min(len(self.per_second), math.floor(self.active_end + 1e-9))
        return range(lo, max(lo, hi))

    @property
    def active_seconds(self) -> float:
        return max(0.0, self.active_end - self.active_start)


def per_second(history: Sequence[Op], ctx: CheckContext) -> dict[str, Series]:
    """Per workload (sysbench included)."""
    return ctx.memo("per_second", history, lambda: _compute(history, ctx))[0]


def per_second_by_node(history: Sequence[Op], ctx: CheckContext) -> dict[str, Series]:
    """Like ``per_second`` for each workload and the node that answered (``"w on node"``),
    over the workload's active window. Sysbench has no per-node figures."""
    return ctx.memo("per_second", history, lambda: _compute(history, ctx))[1]


def _compute(
    history: Sequence[Op], ctx: CheckContext
) -> tuple[dict[str, Series], dict[str, Series]]:
    t0, t1 = ctx.bounds(history)
    n = max(1, math.ceil((t1 - t0) / NS))
    col = ctx.columns(history)
    ryw = [w for w, info in ctx.workloads.items() if info.kind == "read_your_writes"]
    skip = np.isin(col.f, col.codes(REREAD_FS)) | (
        np.isin(col.workload, col.codes(ryw)) & ~np.isin(col.f, col.codes(WRITE_FS)))
    sel = np.flatnonzero(~skip)
    end = col.end.copy()
    end[col.n_done:] = t1  # never completed: until the end of the load
    # ok, within the load: their second (the last second takes the load's end)
    counted = col.ok & (end >= t0) & (end <= t1)
    bucket = np.minimum((end - t0) // NS, n - 1)
    out: dict[str, Series] = {}
    load_s = (t1 - t0) / NS
    node_counts: list[tuple[tuple[str, str], list[float]]] = []
    for (wc,), g in col.groups(col.workload, sel=sel):
        w = col.name(wc)
        first, last = int(col.start[g].min()), int(end[g].max())
        c = g[counted[g]]
        row = np.bincount(bucket[c], minlength=n).astype(float).tolist()
        a = max(0.0, (first - t0) / NS)
        e = min(load_s, (last - t0) / NS)
        # within a second of the load's edges the workload ran for the whole load
        a = 0.0 if a < EDGE_S else a
        e = max(a, load_s if load_s - e < EDGE_S else e)
        out[w] = Series(w, "ops", row, a, e, sum(row))
        for (nc,), gn in col.groups(col.where, sel=c):
            node_counts.append(((w, col.name(nc)),
                                np.bincount(bucket[gn], minlength=n).astype(float).tolist()))

    exits = ctx.facts.get("workload_exits")
    gave_up = set(exits) if isinstance(exits, dict) else set()
    by_wl: dict[str, list[Sample]] = {}
    for smp in ctx.samples:
        if smp.series == SYSBENCH:
            by_wl.setdefault(smp.subject, []).append(smp)
    for w, rows in by_wl.items():
        rows.sort(key=lambda x: x.time)
        series = [0.0] * n
        for smp in rows:
            b = (smp.time - t0 - NS) // NS  # its row, read at T, is the second before T
            if 0 <= b < n:
                series[b] = float(smp.values.get("tps", 0.0))
        a = max(0.0, (rows[0].time - t0) / NS - 1.0)
        e = min(load_s, max(a, (rows[-1].time - t0) / NS))
        if w in gave_up:  # its window is its own: the seconds after it died are stalled
            own = exits[w].get("duration") if isinstance(exits, dict) else None
            e = load_s if not isinstance(own, int | float) else min(load_s, a + float(own))
        out[w] = Series(w, SYSBENCH, series, a, e, sum(series), rows)

    nodes: dict[str, Series] = {}
    for (w, node), row in sorted(node_counts):
        ws = out[w]
        nodes[f"{w} on {node}"] = Series(w, "ops", row, ws.active_start, ws.active_end, sum(row))
    return out, nodes
