"""errors: failed and unknown-outcome operations per workload and per node, by error code.

Per node, the operations that node answered; the operations through the router that no server
answered (refused, timed out before a server was reached) are ``w on router.writer`` (or
``router.reader``), their ratio of every operation sent through that endpoint.

The code is the server/client error number (``"1062"``, ``"2013"``); without one, ``"timeout"``
for an ``info``, ``"fail"`` for a ``fail``, ``"incomplete"`` for an operation that never
completed. ``ratio`` = errors / operations; ``per_second`` = errors per second of the load.
For sysbench: its per-second ``errors`` and ``reconnects`` columns added up over the seconds
(by_code ``"sysbench"``); operations = transactions + errors; a sysbench that gave up before
its end (``ctx.facts["workload_exits"]``: its fatal error ends it) adds one error (by_code
``"exit"``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.history import Op
from lab.judge.checkers.base import CheckContext, CheckResult
from lab.judge.checkers.columns import error_labels
from lab.judge.checkers.series import SYSBENCH

NAME = "errors"


@dataclass(slots=True)
class Counts:
    ops: int = 0
    total: int = 0
    by_code: dict[str, int] = field(default_factory=dict)
    reconnects: int = 0

    def add(self, o: Counts) -> None:
        self.ops += o.ops
        self.total += o.total
        self.reconnects += o.reconnects
        for k, n in o.by_code.items():
            self.by_code[k] = self.by_code.get(k, 0) + n

    def as_json(self, load_s: float) -> dict[str, Any]:
        return {
            "total": self.total,
            "ops": self.ops,
            "per_second": self.total / load_s if load_s > 0 else None,
            "ratio": self.total / self.ops if self.ops else None,
            "by_code": dict(sorted(self.by_code.items())),
            "reconnects": self.reconnects,
        }


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    per_node: dict[tuple[str, str], Counts] = {}
    routed: dict[tuple[str, str], int] = defaultdict(int)  # operations sent through a router
    col = ctx.columns(history)
    routers = np.array([c for c, name in enumerate(col.names)
                        if isinstance(name, str) and name.startswith("router.")], np.int32)
    via_router = np.isin(col.endpoint, routers)
    bad = ~col.ok
    for (wc, ec), g in col.by_where:
        k = (col.name(wc), col.name(ec))
        nc = per_node[k] = Counts()
        nc.ops = len(g)
        r = g[via_router[g]]
        if len(r):
            eps, ns = np.unique(col.endpoint[r], return_counts=True)
            for ep, n in zip(eps.tolist(), ns.tolist(), strict=True):
                routed[(k[0], col.name(ep))] += n
        for label in error_labels(col, g[bad[g]]):
            nc.total += 1
            nc.by_code[label] = nc.by_code.get(label, 0) + 1
    per_w: dict[str, Counts] = defaultdict(Counts)
    for (w, _), nc in per_node.items():
        per_w[w].add(nc)
    for k, n in routed.items():  # no server answered them: of every operation sent there
        if k in per_node:
            per_node[k].ops = n
    sysbench: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for s in ctx.samples:
        if s.series != SYSBENCH:
            continue
        sb = sysbench[s.subject]
        sb[0] += float(s.values.get("tps", 0.0) or 0.0)
        sb[1] += float(s.values.get("errors", 0.0) or 0.0)
        sb[2] += float(s.values.get("reconnects", 0.0) or 0.0)
    for w, (tps, errs, reconn) in sysbench.items():
        x = per_w[w]
        x.ops += round(tps + errs)
        x.total += round(errs)
        if round(errs):
            x.by_code[SYSBENCH] = x.by_code.get(SYSBENCH, 0) + round(errs)
        x.reconnects += round(reconn)
    exits = ctx.facts.get("workload_exits")
    for w in exits if isinstance(exits, dict) else {}:  # sysbench gave up: its fatal error
        x = per_w[w]
        x.ops += 1
        x.total += 1
        x.by_code["exit"] = x.by_code.get("exit", 0) + 1
    load_s = ctx.duration_s(history)
    subjects: dict[str, dict[str, Any]] = {}
    for w, counts in per_w.items():
        subjects[w] = counts.as_json(load_s)
    for (w, node), counts in sorted(per_node.items()):
        subjects[f"{w} on {node}"] = counts.as_json(load_s)
    total = sum(x.total for x in per_w.values())
    return CheckResult(NAME, True, {"total": total, "load_seconds": load_s, "subjects": subjects})
