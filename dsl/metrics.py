"""What each measurement means to the language: its subject, its statistics and their units.

``expect``/``report`` lines name a metric, its subject (a workload or a node), optionally a
statistic (``latency(w).p99``) and a window (``throughput(w) last 30s``). The compiler writes
the default statistic into the plan so that nothing is implicit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

SubjectKind = Literal["workload", "node", "optional_workload"]

WRITE_WORKLOADS = frozenset({"probe", "unique_writes", "read_your_writes", "unique_insert"})
_PERCENTILES = ("p50", "p90", "p95", "p99", "max", "mean")
_LATENCY = {
    "p50": "duration",
    "p90": "duration",
    "p95": "duration",
    "p99": "duration",
    "p999": "duration",
    "max": "duration",
    "min": "duration",
    "mean": "duration",
}


@dataclass(frozen=True)
class MetricSpec:
    subject: SubjectKind
    stats: dict[str, str]  # statistic -> unit kind of its value
    default: str  # the statistic used when none is written
    summary: str
    workload_kinds: frozenset[str] | None = None  # None: any workload
    last: bool = False  # accepts ``last 30s``
    code: bool = False  # accepts an error code: errors(w, 1062)
    on: bool = False  # accepts ``(w on node)``
    replica_only: bool = False  # node metrics: a node that replicates from another
    topologies: frozenset[str] = field(default_factory=frozenset)  # node metrics: where


METRICS: dict[str, MetricSpec] = {
    "downtime": MetricSpec(
        "workload",
        {"max": "duration", "longest": "duration", "total": "duration", "count": "count"},
        "max",
        "the longest stretch with no successful operation (total: all stretches added up; "
        "count: how many stretches)",
        on=True,
    ),
    "stale_reads": MetricSpec(
        "workload",
        {
            "count": "count",
            "total": "count",
            "reads": "count",
            "ratio": "percent",
            "rate": "percent",
            **{p: "duration" for p in _PERCENTILES},
            **{f"behind_{p}": "duration" for p in _PERCENTILES},
        },
        "count",
        "reads that did not see a write already acknowledged (ratio: of the eligible reads; "
        "p50..max: how long after its acknowledgement a write became visible; behind_p99...: "
        "how far behind the stale reads were)",
        workload_kinds=frozenset({"read_your_writes"}),
        on=True,
    ),
    "duplicate_keys": MetricSpec(
        "workload",
        {"count": "count", "total": "count", "ratio": "percent"},
        "count",
        "inserts refused with a duplicate-key error (1062, or 11000 on MongoDB)",
        workload_kinds=frozenset({"unique_insert", "unique_writes"}),
        on=True,
    ),
    "lost_writes": MetricSpec(
        "optional_workload",
        {
            "count": "count",
            "total": "count",
            "ratio": "percent",
            "acknowledged": "count",
            "unknown": "count",
            "unknown_applied": "count",
            "failed_but_present": "count",
            "not_replicated": "count",
            "divergent": "count",
            "unchecked": "count",
        },
        "count",
        "acknowledged writes missing from the authoritative state at the end: the writer "
        "after settling, or on two primaries the node that acknowledged the write (all writing "
        "workloads when no workload is named); not_replicated: acknowledged writes missing on "
        "another node; divergent: keys whose rows differ between nodes; unchecked: writes "
        "whose authoritative node could not be read",
        workload_kinds=WRITE_WORKLOADS,
    ),
    "missing_transactions": MetricSpec(
        "node",
        {"count": "count", "total": "count", "before_heal": "count", "at_promote": "count"},
        "count",
        "transactions the authoritative state has and the node does not, after healing and "
        "settling (before_heal: as the timeline left them, before the lab healed the faults; "
        "at_promote: what a promoted replica lacked of the old primary's binlog when promoted); "
        "replication: the primary's binlog position; two primaries: each domain's writer; "
        "Galera: the most advanced node's wsrep_last_committed",
        replica_only=True,
        topologies=frozenset({"replication", "primary_primary", "galera"}),
    ),
    "replication_lag": MetricSpec(
        "node",
        {s: "duration" for s in ("max", "mean", "p50", "p90", "p95", "p99")},
        "max",
        "how far the replica is behind its primary, sampled every second",
        replica_only=True,
        last=True,
        topologies=frozenset({"replication", "primary_primary", "mongodb_replset"}),
    ),
    "throughput": MetricSpec(
        "workload",
        {"mean": "rate", "min": "rate", "max": "rate", "p50": "rate", "total": "count"},
        "mean",
        "successful operations per second (per-second series; mean over the window)",
        last=True,
        on=True,
    ),
    "latency": MetricSpec(
        "workload",
        dict(_LATENCY),
        "p99",
        "response time of successful operations",
        last=True,
        on=True,
    ),
    "errors": MetricSpec(
        "workload",
        {"count": "count", "total": "count", "ratio": "percent", "rate": "rate"},
        "count",
        "failed operations, all codes or one code: errors(w, 1213)",
        last=True,
        code=True,
        on=True,
    ),
    "stalls": MetricSpec(
        "workload",
        {"count": "count", "total": "duration", "max": "duration", "longest": "duration"},
        "count",
        "seconds in which the workload completed no operation",
        last=True,
    ),
    "warmup": MetricSpec(
        "workload",
        {"time": "duration", "seconds": "duration", "min_level": "percent"},
        "time",
        "time until throughput is back at 90% of its level: after a cache-drop fault, or "
        "from the start when there is none (min_level: the lowest level after the fault)",
    ),
    "relay_log_bytes": MetricSpec(
        "node",
        {
            "final": "size",
            "after": "size",
            "before": "size",
            "growth": "size",
            "max": "size",
            "min": "size",
        },
        "final",
        "size of the replica's relay logs (final/after: at the end of the load; before: at its "
        "start; growth: the difference)",
        replica_only=True,
        topologies=frozenset({"replication", "primary_primary"}),
    ),
    "failover": MetricSpec(
        "optional_workload",
        {
            "outage": "duration",
            "recovered": "duration",
            "first_failure": "duration",
            "new_writer_accepts": "duration",
            "router_switch": "duration",
        },
        "outage",
        "the first promote, from what the clients saw: outage (last successful write before "
        "the fault to the first one after it, per endpoint, the worst), recovered, "
        "first_failure, new_writer_accepts (first write answered by the new primary), "
        "router_switch; in seconds from the fault on the old primary",
        workload_kinds=WRITE_WORKLOADS,
    ),
    "replication_errors": MetricSpec(
        "node",
        {"count": "count", "sql_errno": "count", "io_errno": "count", "stopped_at": "duration"},
        "count",
        "replication threads of the node that stopped on an error (count: stops on an error; "
        "sql_errno/io_errno: the first error code, 0 when none; stopped_at: seconds since the "
        "start of the load), sampled every 200 ms",
        topologies=frozenset({"replication", "primary_primary"}),
    ),
}


def resolve_stat(metric: str, stat: str | None, value_kind: str | None = None) -> str:
    """The statistic a metric line means: the one written, else ``ratio`` when compared
    with a percentage and the metric has one, else the metric's default."""
    spec = METRICS[metric]
    if stat is not None:
        return stat
    if value_kind == "percent" and "ratio" in spec.stats:
        return "ratio"
    return spec.default
