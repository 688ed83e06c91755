"""Checkers: pure functions ``check(history, ctx) -> CheckResult`` over a run's history.

``run_checkers(history, ctx)`` runs every checker in ``ALL_CHECKERS``; a checker that raises
yields ``valid=None`` with the error in ``details`` instead of stopping the others.
"""

from __future__ import annotations

from lab.judge.checkers import (
    anomalies,
    divergence,
    downtime,
    duplicate_keys,
    errant_gtids,
    errors,
    facts,
    failover,
    latency,
    lost_writes,
    replication_errors,
    replication_lag,
    router_failover,
    semi_sync,
    split_brain,
    stale_reads,
    throughput,
    txn_state,
    warmup,
)
from lab.judge.checkers.base import (
    CheckContext,
    Checker,
    CheckResult,
    MeasurementRow,
    WorkloadInfo,
    compose,
    flatten_metrics,
    run_checkers,
    safe_check,
)

ALL_CHECKERS: dict[str, Checker] = {
    "downtime": downtime.check,
    "stale_reads": stale_reads.check,
    "duplicate_keys": duplicate_keys.check,
    "lost_writes": lost_writes.check,
    "replication_lag": replication_lag.check,
    "throughput": throughput.check_throughput,
    "stalls": throughput.check_stalls,
    "latency": latency.check,
    "errors": errors.check,
    "warmup": warmup.check,
    "facts": facts.check,
    "failover": failover.check,
    "router_failover": router_failover.check,
    "replication_errors": replication_errors.check,
    "semi_sync": semi_sync.check,
    "split_brain": split_brain.check,
    "errant_gtids": errant_gtids.check,
    "divergence": divergence.check,
    "lost_updates": txn_state.check_lost_updates,
    "bank": txn_state.check_bank,
    "lost_appends": txn_state.check_lost_appends,
    "anomalies": anomalies.check,
}

__all__ = [
    "ALL_CHECKERS",
    "CheckContext",
    "CheckResult",
    "Checker",
    "MeasurementRow",
    "WorkloadInfo",
    "compose",
    "flatten_metrics",
    "run_checkers",
    "safe_check",
]
