"""latency: invoke -> ok of every ok operation, per workload and per workload and node:
count, mean, min, p50, p90, p95, p99, p999, max (seconds).

Only ``ok`` operations count (a timeout's latency is the timeout). For sysbench the figures are
over its per-second 95th-percentile column (``lat_p95``, seconds): ``max`` is the worst
per-second p95, not the worst single transaction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from lab.history import NS, Op
from lab.judge.checkers.base import CheckContext, CheckResult, summary
from lab.judge.checkers.columns import I64, summary_ints
from lab.judge.checkers.series import SYSBENCH

NAME = "latency"


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    col = ctx.columns(history)
    latency = col.end - col.start
    ok = col.ok
    per_node: dict[tuple[str, str], I64] = {}
    for (wc, ec), g in col.by_where:
        xs = latency[g[ok[g]]]
        if len(xs):
            per_node[(col.name(wc), col.name(ec))] = xs
    lat: dict[str, list[I64]] = defaultdict(list)
    for (w, _), xs in per_node.items():
        lat[w].append(xs)
    subjects: dict[str, dict[str, Any]] = {}
    for w, parts in lat.items():
        subj: dict[str, Any] = summary_ints(np.concatenate(parts), scale=1 / NS)
        subj["source"] = "ops"
        subjects[w] = subj
    for (w, node), xs in sorted(per_node.items()):
        subj = summary_ints(xs, scale=1 / NS)
        subj["source"] = "ops"
        subjects[f"{w} on {node}"] = subj
    sb: dict[str, list[float]] = defaultdict(list)
    for s in ctx.samples:
        if s.series == SYSBENCH and "lat_p95" in s.values:
            sb[s.subject].append(float(s.values["lat_p95"]))
    for w, secs in sb.items():
        subj = dict(summary(secs))
        subj["source"] = "sysbench per-second p95"
        subjects[w] = subj
    return CheckResult(NAME, True, {"subjects": subjects})
