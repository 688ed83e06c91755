"""A results database holding a synthetic failover run, built through the Store API with the
real checkers and expectations: what ``lab run`` would have stored, without servers.

The run has two cells (variants ``a`` and ``b``), each 10 s of load:

- ``writes``: a probe through ``router.writer``, one write every 100 ms taking 5 ms, answered
  by db1 until db1 is killed at 4 s; from then on it fails (``info`` 2013 until 4.3 s, then
  ``fail`` 2003 "not sent") until ``recovery`` (5.5 s in ``a``, 6.5 s in ``b``), then db2
  answers;
- ``ryw``: read_your_writes, a write every 250 ms (4 ms), key ``i % 5``, version ``i``; its
  reader reads db3 1 ms after each ack (3 ms): odd writes are seen at once (visible 4 ms after
  the ack), even ones are stale and seen by a poll 30 ms after the ack;
- faults: kill db1 at 4.0 (done at 4.02), wait until db1 down (4.05-4.1), promote db2 4.5-4.8,
  start db1 8.0-8.6;
- lag samples every 500 ms: db3 0.2 s (1.5 s from 4 to 6 s, unreadable at 4.5 s), db2 0.05 s
  until it is promoted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dsl.api import plan_text
from lab.history import NEMESIS, Op, Sample, fault_windows
from lab.judge.checkers import CheckContext, WorkloadInfo, run_checkers
from lab.judge.expectations import evaluate_all
from lab.run.summary import report_figure
from lab.store.db import Store

S = 1_000_000_000
T0 = 1000 * S  # the load starts at this monotonic time
LOAD_SECONDS = 10.0

EXPERIMENT = """experiment "synthetic-failover" {
  topology replication {
    primary db1
    replicas db2, db3
  }
  router haproxy {
    writer db1
    readers db2, db3
  }
  workload writes: probe { target router.writer  every 100ms }
  workload ryw: read_your_writes { write router.writer  read db3 }
  variant a { }
  variant b { }
  at 4s kill db1
  at 4500ms promote db2
  at 8s start db1
  expect downtime(writes) < 1s
  expect failover.outage < 3s
  expect stale_reads(ryw on db3).p99 < 1s
  report throughput(writes)
}
"""
RECOVERY = {"a": 5.5, "b": 6.5}


def ns(t: float) -> int:
    return T0 + round(t * S)


def _op(type_: str, f: str, p: int, t: float, **kw: Any) -> Op:
    return Op(type_, f, p, ns(t), **kw)  # type: ignore[arg-type]


def cell_history(recovery: float) -> list[Op]:
    ops: list[Op] = []
    # the probe
    for i in range(100):
        t = i / 10
        common = {"workload": "writes", "endpoint": "router.writer", "key": i, "value": i}
        ops.append(_op("invoke", "write", 1, t, **common))
        if t < 4.0:
            ops.append(_op("ok", "write", 1, t + 0.005, node="db1", **common))
        elif t < 4.3:
            ops.append(_op("info", "write", 1, t + 0.005, error=2013,
                           error_msg="Lost connection to server during query", **common))
        elif t < recovery:
            ops.append(_op("fail", "write", 1, t + 0.005, error=2003,
                           error_msg="not sent: Can't connect to server", **common))
        else:
            ops.append(_op("ok", "write", 1, t + 0.005, node="db2", **common))
    # read_your_writes: writer process 2, reader process 3 on db3
    for i in range(40):
        t = i * 0.25
        key = i % 5
        w = {"workload": "ryw", "endpoint": "router.writer", "key": key, "value": i}
        ops.append(_op("invoke", "write", 2, t, **w))
        ack = t + 0.004
        if 4.0 <= t < recovery:
            ops.append(_op("fail", "write", 2, ack, error=2003,
                           error_msg="not sent: Can't connect to server", **w))
            continue
        ops.append(_op("ok", "write", 2, ack, node="db1" if t < 4.0 else "db2", **w))
        r = {"workload": "ryw", "endpoint": "db3", "key": key}
        seen = i if i % 2 else (i - 5 if i >= 5 else None)
        ops.append(_op("invoke", "read", 3, ack + 0.001, **r))
        ops.append(_op("ok", "read", 3, ack + 0.004, node="db3", value=seen, **r))
        if i % 2 == 0:  # stale: a poll sees it 30 ms after the ack
            ops.append(_op("invoke", "poll", 3, ack + 0.02, workload="ryw", endpoint="db3"))
            ops.append(_op("ok", "poll", 3, ack + 0.03, workload="ryw", endpoint="db3",
                           node="db3", value=[[key, i]]))  # fmt: skip
    # the faults
    ops += [
        _op("invoke", "kill", NEMESIS, 4.0, workload="nemesis", node="db1"),
        _op("ok", "kill", NEMESIS, 4.02, workload="nemesis", node="db1", value={"signal": 9}),
        _op("invoke", "wait_down", NEMESIS, 4.05, workload="nemesis", node="db1"),
        _op("ok", "wait_down", NEMESIS, 4.1, workload="nemesis", node="db1"),
        _op("invoke", "promote", NEMESIS, 4.5, workload="nemesis", node="db2"),
        _op("ok", "promote", NEMESIS, 4.8, workload="nemesis", node="db2",
            value={"old_primary": "db1", "new_primary": "db2"}),
        _op("invoke", "start", NEMESIS, 8.0, workload="nemesis", node="db1"),
        _op("ok", "start", NEMESIS, 8.6, workload="nemesis", node="db1"),
    ]  # fmt: skip
    ops.sort(key=lambda o: o.time)
    return [Op(o.type, o.f, o.process, o.time, o.workload, o.endpoint, o.node, o.key, o.value,
               o.error, o.error_msg, i) for i, o in enumerate(ops)]  # fmt: skip


def cell_samples() -> list[Sample]:
    out: list[Sample] = []
    for i in range(20):
        t = i * 0.5
        lag = float("nan") if t == 4.5 else (1.5 if 4.0 <= t < 6.0 else 0.2)
        out.append(Sample("lag", "db3", ns(t), {"lag": lag}))
        if t < 4.5:
            out.append(Sample("lag", "db2", ns(t), {"lag": 0.05}))
    return out


def build_run(db: Path) -> str:
    """Store the synthetic run in ``db``; returns its id."""
    plan = plan_text(EXPERIMENT, "synthetic-failover.exp")
    with Store(db) as store:
        rid = store.create_run(plan.name, "synthetic-failover.exp")
        cells = []
        for cell in plan.cells:
            variant = cell.variant or "a"
            store.create_cell(rid, cell.index, cell.label, variant=cell.variant)
            history = cell_history(RECOVERY[variant])
            samples = cell_samples()
            store.insert_operations(rid, cell.index, history)
            store.insert_samples(rid, cell.index, samples)
            store.write_faults(rid, cell.index, fault_windows(history))
            ctx = CheckContext(
                workloads={w.name: WorkloadInfo(w.kind) for w in cell.workloads},
                load_start=ns(0), load_end=ns(LOAD_SECONDS), samples=samples,
            )  # fmt: skip
            results = run_checkers(history, ctx)
            outcomes = evaluate_all(plan.expectations, results, ctx, history)
            store.write_measurements(rid, cell.index, results)
            store.write_expectations(rid, cell.index, outcomes)
            status = "passed" if all(o.passed for o in outcomes) else "failed"
            store.finish_cell(rid, cell.index, status, load_start_ns=ns(0),
                              load_end_ns=ns(LOAD_SECONDS))  # fmt: skip
            cells.append({
                "index": cell.index, "label": cell.label, "variant": cell.variant,
                "sweep": {}, "repeat": 1, "status": status, "error": None,
                "operations": sum(1 for o in history if o.type == "invoke"),
                "notes": [], "workloads": {w.name: w.kind for w in cell.workloads},
                "expectations": [o.to_json() for o in outcomes],
                "reports": [report_figure(r.metric, r.text, results, ctx)
                            for r in plan.reports],
                "measurements": {name: r.metrics for name, r in results.items()},
            })  # fmt: skip
        status = "passed" if all(c["status"] == "passed" for c in cells) else "failed"
        summary = {"run_id": rid, "experiment": plan.name, "source": "synthetic-failover.exp",
                   "status": status, "exit_code": 0 if status == "passed" else 1,
                   "message": None, "cells": cells}  # fmt: skip
        store.finish_run(rid, status, summary["exit_code"], summary=summary)  # type: ignore[arg-type]
    return rid
