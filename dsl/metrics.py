"""What each measurement means to the language: its subject, its statistics, where each
statistic is found in the checker's metrics and in which unit, and the function of
``lab.judge.expectations`` that reads it. The one table per metric: the validator, ``expect`` and
``report`` all read ``METRICS``.

``expect``/``report`` lines name a metric, its subject (a workload or a node), optionally a
statistic (``latency(w).p99``) and a window (``throughput(w) last 30s``). The compiler writes
the default statistic into the plan so that nothing is implicit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

SubjectKind = Literal["workload", "node", "optional_workload"]

WRITE_WORKLOADS = frozenset({"probe", "unique_writes", "read_your_writes", "unique_insert"})
# the workloads whose every operation is recorded (sysbench's are per-second rows only)
OPERATION_WORKLOADS = WRITE_WORKLOADS | {"connect", "list_append", "read_modify_write", "bank"}
# where split_brain is not defined: its figure is NULL (lab.judge.checkers.split_brain), and lab
# check refuses an expectation of it (dsl.validate)
SPLIT_BRAIN_UNDEFINED = {
    "primary_primary": "two primaries take writes by design: split brain is not defined there",
    "mongodb_replset": "not measured on MongoDB replica sets",
}
_PERCENTILES = ("p50", "p90", "p95", "p99", "max", "mean")
# the anomalies checker's kinds (lab.judge.checkers.anomalies.KINDS), each a statistic of its own
ANOMALY_KINDS = ("g0", "g1a", "g1b", "g1c", "g_single", "g2_item", "lost_update", "internal",
                 "future_read", "duplicate", "garbage", "incompatible_order", "stale_read")


@dataclass(frozen=True)
class MetricSpec:
    subject: SubjectKind
    figures: dict[str, tuple[str, str]]  # statistic -> (path in the checker's metrics, unit)
    default: str  # the statistic used when none is written
    summary: str
    reader: str  # the function of lab.judge.expectations that reads the figure
    workload_kinds: frozenset[str] | None = None  # None: any workload
    last: bool = False  # accepts ``last 30s``
    code: bool = False  # accepts an error code: errors(w, 1062)
    on: bool = False  # accepts ``(w on node)``
    replica_only: bool = False  # node metrics: a node that replicates from another
    topologies: frozenset[str] = field(default_factory=frozenset)  # node metrics: where
    open_label: str = ""  # what a figure that is only a lower bound means

    @property
    def stats(self) -> dict[str, str]:
        """statistic -> unit kind of its value"""
        return {stat: unit for stat, (_, unit) in self.figures.items()}


def _same(unit: str, *stats: str) -> dict[str, tuple[str, str]]:
    """Statistics stored under their own name."""
    return {s: (s, unit) for s in stats}


METRICS: dict[str, MetricSpec] = {
    "downtime": MetricSpec(
        "workload",
        {"max": ("longest", "duration"), "longest": ("longest", "duration"),
         "total": ("total", "duration"), "count": ("count", "count"),
         "error_windows": ("error_windows", "count"), "stalls": ("stalls", "count")},
        "max",
        "the longest stretch with no successful operation (total: all stretches added up; "
        "count: how many stretches; error_windows: those in which an operation failed; "
        "stalls: those in which one only took longer than 200 ms)",
        "_downtime",
        workload_kinds=OPERATION_WORKLOADS,
        on=True,
        open_label="still down at end",
    ),
    "stale_reads": MetricSpec(
        "workload",
        {
            "count": ("count", "count"),
            "total": ("count", "count"),
            "reads": ("eligible_reads", "count"),
            "ratio": ("rate", "percent"),
            "rate": ("rate", "percent"),
            **{p: (f"visibility.{p}", "duration") for p in _PERCENTILES},
            **{f"behind_{p}": (f"time_behind.{p}", "duration") for p in _PERCENTILES},
        },
        "count",
        "reads that did not see a write already acknowledged (ratio: of the eligible reads; "
        "p50..max: how long after its acknowledgement a write became visible; behind_p99...: "
        "how far behind the stale reads were)",
        "_stale_reads",
        workload_kinds=frozenset({"read_your_writes"}),
        on=True,
        open_label="writes never seen",
    ),
    "duplicate_keys": MetricSpec(
        "workload",
        {"count": ("count", "count"), "total": ("count", "count"),
         "ratio": ("ratio", "percent")},
        "count",
        "inserts refused with a duplicate-key error (1062, or 11000 on MongoDB)",
        "_duplicate_keys",
        workload_kinds=frozenset({"unique_insert", "unique_writes"}),
        on=True,
    ),
    "lost_writes": MetricSpec(
        "optional_workload",
        {
            "count": ("count", "count"),
            "total": ("count", "count"),
            "ratio": ("ratio", "percent"),
            **_same("count", "acknowledged", "unknown", "unknown_applied", "failed_but_present",
                    "not_replicated", "divergent", "unchecked"),
        },
        "count",
        "acknowledged writes missing from the authoritative state at the end: the writer "
        "after settling, or on two primaries the node that acknowledged the write (all writing "
        "workloads when no workload is named); not_replicated: acknowledged writes missing on "
        "another node; divergent: keys whose rows differ between nodes; unchecked: writes "
        "whose authoritative node could not be read; a list_append workload: its "
        "acknowledged appends missing from their key's list on the authoritative node",
        "_lost_writes",
        workload_kinds=WRITE_WORKLOADS | {"list_append"},
    ),
    "missing_transactions": MetricSpec(
        "node",
        {"count": ("missing_transactions", "count"), "total": ("missing_transactions", "count"),
         "before_heal": ("missing_before_heal", "count"),
         "at_promote": ("missing_at_promote", "count")},
        "count",
        "transactions the authoritative state has and the node does not, after healing and "
        "settling (before_heal: as the timeline left them, before the lab healed the faults; "
        "at_promote: what a promoted replica lacked of the old primary's binlog when promoted); "
        "replication: the primary's binlog position; two primaries: each domain's writer; "
        "Galera: the most advanced node's wsrep_last_committed",
        "_missing_transactions",
        replica_only=True,
        topologies=frozenset({"replication", "primary_primary", "galera"}),
    ),
    "replication_lag": MetricSpec(
        "node",
        _same("duration", "max", "mean", "p50", "p90", "p95", "p99"),
        "max",
        "how far the replica is behind its primary, sampled every second",
        "_replication_lag",
        replica_only=True,
        last=True,
        topologies=frozenset({"replication", "primary_primary", "mongodb_replset"}),
    ),
    "throughput": MetricSpec(
        "workload",
        {**_same("rate", "mean", "min", "max", "p50"), "total": ("total", "count")},
        "mean",
        "successful operations per second (per-second series; mean over the window)",
        "_throughput",
        last=True,
        on=True,
    ),
    "latency": MetricSpec(
        "workload",
        _same("duration", "p50", "p90", "p95", "p99", "p999", "max", "min", "mean"),
        "p99",
        "response time of successful operations",
        "_latency",
        last=True,
        on=True,
    ),
    "errors": MetricSpec(
        "workload",
        {"count": ("count", "count"), "total": ("count", "count"),
         "ratio": ("ratio", "percent"), "rate": ("rate", "rate")},
        "count",
        "failed operations, all codes or one code: errors(w, 1213)",
        "_errors",
        last=True,
        code=True,
        on=True,
    ),
    "stalls": MetricSpec(
        "workload",
        {"count": ("count", "count"), "total": ("count", "duration"),
         "max": ("longest", "duration"), "longest": ("longest", "duration")},
        "count",
        "seconds in which the workload completed no operation",
        "_stalls",
        last=True,
    ),
    "warmup": MetricSpec(
        "workload",
        {"time": ("warmup", "duration"), "seconds": ("warmup", "duration"),
         "min_level": ("min_level", "percent")},
        "time",
        "time until throughput is back at 90% of its level: after a cache-drop fault, or "
        "from the start when there is none (min_level: the lowest level after the fault)",
        "_warmup",
        open_label="not back to 90% by the end",
    ),
    "relay_log_bytes": MetricSpec(
        "node",
        {"final": ("after", "size"), **_same("size", "after", "before", "growth", "max", "min")},
        "final",
        "size of the replica's relay logs around its (last) start or restart in the timeline "
        "(before: just before it; final/after: as soon as it returned, what relay log "
        "recovery left; growth: the difference)",
        "_relay_log_bytes",
        replica_only=True,
        topologies=frozenset({"replication", "primary_primary"}),
    ),
    "failover": MetricSpec(
        "optional_workload",
        _same("duration", "outage", "recovered", "first_failure", "new_writer_accepts",
              "router_switch"),
        "outage",
        "the first promote, from what the clients saw: outage (last successful write before "
        "the fault to the first one after it, per endpoint, the worst), recovered, "
        "first_failure, new_writer_accepts (first write answered by the new primary), "
        "router_switch; in seconds from the fault on the old primary",
        "_failover",
        workload_kinds=WRITE_WORKLOADS,
        open_label="still down at end",
    ),
    "router_failover": MetricSpec(
        "optional_workload",
        {**_same("duration", "detected", "switched", "accepted"),
         "duration": ("accepted", "duration")},
        "accepted",
        "the router moving the writes off a writer that failed, on its own (no promote): "
        "detected (it stops routing writes to the old writer), switched (another node is its "
        "writer), accepted (the first write through router.writer another node answered, of "
        "the workload when one is named); in seconds from the fault on the old writer, from "
        "the router's state sampled every 50 ms",
        "_router_failover",
        workload_kinds=WRITE_WORKLOADS,
        open_label="not before the end",
    ),
    "replication_errors": MetricSpec(
        "node",
        {**_same("count", "count", "sql_errno", "io_errno"),
         "stopped_at": ("stopped_at", "duration")},
        "count",
        "replication threads of the node that stopped on an error (count: stops on an error; "
        "sql_errno/io_errno: the first error code, 0 when none; stopped_at: seconds since the "
        "start of the load), sampled every 200 ms",
        "_replication_errors",
        topologies=frozenset({"replication", "primary_primary"}),
    ),
    "split_brain": MetricSpec(
        "optional_workload",
        {"longest": ("longest", "duration"), "max": ("longest", "duration"),
         "total": ("total", "duration"), "count": ("count", "count"),
         "writes": ("writes", "count")},
        "longest",
        "the time during which two or more nodes took writes as primaries at once: a sampled "
        "read_only = 0 (every 200 ms) or acknowledged writes (exact); longest window (total: "
        "all windows added up; count: how many; writes: acknowledged writes inside them, of "
        "the workload when one is named)",
        "_split_brain",
        workload_kinds=WRITE_WORKLOADS,
        open_label="still split at end",
    ),
    "errant_gtids": MetricSpec(
        "node",
        {"count": ("count", "count"), "total": ("count", "count"),
         "at_least": ("at_least", "count")},
        "count",
        "transactions in the node's binary log that the primary lacks after settling (MariaDB "
        "GTIDs per domain and server id; at_least: the (domain, server id) pairs ahead)",
        "_errant_gtids",
        topologies=frozenset({"replication"}),
    ),
    "semi_sync": MetricSpec(
        "node",
        {"unacknowledged": ("unacknowledged", "count"),
         "acknowledged": ("acknowledged", "count"),
         "fallbacks": ("fallbacks", "count"), "count": ("fallbacks", "count"),
         "off": ("off", "duration")},
        "unacknowledged",
        "the primary side of semi-synchronous replication on the node: commits that went on "
        "without a replica's acknowledgement (unacknowledged; acknowledged: those that had "
        "one), from the server's own counters over the load; fallbacks (alias count): how "
        "often it fell back to asynchronous; off: how long it stayed so (sampled every 200 ms)",
        "_semi_sync",
        topologies=frozenset({"replication"}),
    ),
    "divergence": MetricSpec(
        "optional_workload",
        _same("count", "rows", "missing", "extra", "different", "chunks"),
        "rows",
        "rows of the workload's tables that differ between a node and the primary after "
        "settling (chunk checksums, then row by row): missing on the node, extra on it, or "
        "different; every table when no workload is named",
        "_divergence",
        workload_kinds=WRITE_WORKLOADS | {"sysbench"},
        on=True,
    ),
    "lost_updates": MetricSpec(
        "workload",
        {"count": ("count", "count"), "total": ("count", "count"),
         "ratio": ("ratio", "percent"),
         **_same("count", "acknowledged", "unknown", "same_read", "growth", "phantom",
                 "at_least", "at_most")},
        "count",
        "read_modify_write: acknowledged increments the counters do not show at the end "
        "(acknowledged − growth; a bound when some increments have an unknown outcome; "
        "same_read: acknowledged increments that read a value another one had read); "
        "list_append: the anomaly checker's lost-update (P4) count",
        "_lost_updates",
        workload_kinds=frozenset({"read_modify_write", "list_append"}),
        open_label="some increments of unknown outcome",
    ),
    "wrong_totals": MetricSpec(
        "workload",
        {"count": ("count", "count"), "total": ("count", "count"),
         **_same("count", "reads", "negative", "created", "final_total", "expected_total")},
        "count",
        "bank: acknowledged reads of every balance whose total was not accounts × 100 "
        "(negative: reads with a negative balance; created: the final total minus the "
        "expected one, on the authoritative node)",
        "_wrong_totals",
        workload_kinds=frozenset({"bank"}),
    ),
    "anomalies": MetricSpec(
        "workload",
        {"count": ("count", "count"), "total": ("count", "count"),
         **_same("count", *ANOMALY_KINDS)},
        "count",
        "transactional anomalies of a list_append workload, found as Elle finds them (count: "
        "all kinds; g0, g1a, g1b, g1c, g_single, g2_item: Adya's, cycles counted once per "
        "strongly connected component; lost_update, internal, future_read, duplicate, garbage, "
        "incompatible_order; stale_read: cycles that need a realtime edge); unknown when no "
        "committed transaction read a key",
        "_anomalies",
        workload_kinds=frozenset({"list_append"}),
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
