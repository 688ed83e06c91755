"""How precisely a figure is known: the resolution of the figure an ``expect`` line names.

``figure_resolution(metric, cell, results, value_kind)`` says it in words, e.g.
``± 10.0 ms (one operation of 'writes' every 10.0 ms, plus its latency)``, or None when
nothing useful can be said. Each statement is the one ``docs/results.md`` makes for the figure:

- downtime and failover phases: one operation interval of a client of the workload
  (``every``, or ``clients / rate``), plus one operation's latency (several clients may run in
  step, so their number does not shorten it); unpaced workloads: the gap between two of its
  operations;
- visibility (``stale_reads(w).p50`` ...): the poll interval actually seen (the checker's
  ``resolution``);
- per-second series (``stalls``, ``warmup``): 1 s; ``replication_lag``: sampled every second;
  ``replication_errors(n).stopped_at``: sampled every 200 ms;
- counts (lost writes, duplicate keys, errors, missing transactions) and their ratios: exact.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsl.metrics import METRICS, resolve_stat
from dsl.models import Metric
from dsl.plan import Cell, PlannedWorkload
from lab.figures_format import format_duration
from lab.judge.checkers import CheckResult

_PER_SECOND = "1 s (a per-second series)"
_VISIBILITY_STATS = frozenset({"p50", "p90", "p95", "p99", "max", "mean"})


def _interval(w: PlannedWorkload) -> float | None:
    """Seconds between two operations of one client of the workload, when it is paced."""
    if w.every:
        return w.every
    if w.rate:
        return max(w.clients, 1) / w.rate
    return None


def _operation_interval(cell: Cell, workload: str | None) -> str:
    found = next((w for w in cell.workloads if w.name == workload), None)
    if found is None:
        return "± the gap between two operations of the workload, plus one operation's latency"
    interval = _interval(found)
    if interval is None:
        return (f"± the gap between two operations of '{found.name}', plus one operation's "
                "latency")
    shown = format_duration(interval)
    if found.clients > 1:
        return (f"± {shown} (each of the {found.clients} clients of '{found.name}' operates "
                f"every {shown}, plus one operation's latency)")
    return f"± {shown} (one operation of '{found.name}' every {shown}, plus its latency)"


def _subject(results: Mapping[str, CheckResult], checker: str, key: str) -> dict[str, Any]:
    r = results.get(checker)
    subjects = r.metrics.get("subjects") if r is not None else None
    if not isinstance(subjects, dict):
        return {}
    found = subjects.get(key)
    return found if isinstance(found, dict) else {}


def figure_resolution(metric: Metric, cell: Cell, results: Mapping[str, CheckResult],
                      value_kind: str | None = None) -> str | None:
    """The resolution of the figure ``metric`` names, in words; None when unknown."""
    spec = METRICS.get(metric.name)
    if spec is None:
        return None
    stat = resolve_stat(metric.name, metric.stat, value_kind)
    unit = spec.stats.get(stat)
    if unit is None:
        return None
    name = metric.name
    if unit in ("count", "percent") and name not in ("stalls", "warmup"):
        return "exact (a count)" if unit == "count" else "exact (a ratio of counts)"
    if name in ("downtime", "failover"):
        return _operation_interval(cell, metric.subject)
    if name == "stale_reads" and stat in _VISIBILITY_STATS:
        key = f"{metric.subject} on {metric.on}" if metric.on else str(metric.subject)
        vis = _subject(results, "stale_reads", key).get("visibility")
        res = vis.get("resolution") if isinstance(vis, dict) else None
        if isinstance(res, int | float) and not isinstance(res, bool) and res > 0:
            return f"± {format_duration(float(res))} (the poll interval seen, plus a read)"
        return "± one poll interval (10 ms) plus a read's latency"
    if name in ("stalls", "warmup"):
        return _PER_SECOND
    if name == "replication_lag":
        return "1 s (sampled every second)"
    if name == "replication_errors":
        return "200 ms (sampled every 200 ms)"
    if name == "split_brain":
        r = results.get("split_brain")
        if r is not None and r.metrics.get("evidence") == "writes only":
            return "a lower bound (read_only was not sampled: from the writes alone)"
        return ("± 200 ms at each end (read_only sampled every 200 ms; acknowledged writes "
                "exact)")
    if name == "relay_log_bytes":
        return "exact (read from the server)"
    return None
