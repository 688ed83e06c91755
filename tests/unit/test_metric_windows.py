"""``from A to B``: a figure over part of the load (a docs-only reader wanted "did the
minority's writes fail *during* the partition?", which ``last N`` cannot say). The same readers
as ``last N``, over seconds A to B of the load."""

from __future__ import annotations

import pytest
from histories import ctx, history, probe

from dsl.api import check_text, plan_text
from lab.history import Sample
from lab.judge.checkers import run_checkers
from lab.judge.expectations import evaluate, metric_text

TEXT = """experiment "t" {{
  duration 20s
  topology replication {{ primary db1  replicas db2 }}
  workload w: unique_writes {{ target db1 }}
  expect {metric}
}}
"""


def judged(metric: str, h: list, c) -> tuple[bool | None, float | None, str]:  # type: ignore[type-arg]
    plan = plan_text(TEXT.format(metric=metric))
    results = run_checkers(h, c)
    e = plan.expectations[0]
    out = evaluate(e, results, c, history=h)
    return out.passed, out.measured, out.explanation


def _load() -> tuple[list, object]:  # type: ignore[type-arg]
    """One write every 100 ms for 20 s: ok but for 1047 errors from 5 s to 10 s, each ok
    write taking 10 ms (50 ms from 12 s to 14 s); the replica's lag 2 s from 6 s to 8 s."""
    ops = []
    for i in range(200):
        t = i * 0.1
        if 5.0 <= t < 10.0:
            ops.append((t, t + 0.01, "fail"))
        else:
            ops.append((t, t + (0.05 if 12.0 <= t < 14.0 else 0.01), "ok"))
    h = history(probe(ops, error=1047))
    lag = [Sample("lag", "db2", round(t * 1e9) // 1, {"lag": 2.0 if 6.0 <= t < 8.0 else 0.01})
           for t in [i * 0.2 for i in range(100)]]
    return h, ctx(0, 20, workloads={"w": "unique_writes"}, samples=lag)


def test_errors_during_a_window_and_not_outside_it() -> None:
    h, c = _load()
    assert judged("errors(w, 1047) from 5s to 10s == 50", h, c)[:2] == (True, 50.0)
    assert judged("errors(w, 1047) from 11s to 20s == 0", h, c)[:2] == (True, 0.0)
    assert judged("errors(w).ratio from 5s to 10s == 100%", h, c)[0] is True


def test_throughput_latency_lag_and_stalls_over_a_window() -> None:
    h, c = _load()
    assert judged("throughput(w) from 0s to 5s >= 9/s", h, c)[0] is True
    passed, value, _ = judged("throughput(w) from 6s to 9s == 0/s", h, c)
    assert (passed, value) == (True, 0.0)  # every write failed then: nothing completed
    passed, value, _ = judged("latency(w).max from 12s to 14s > 40ms", h, c)
    assert passed is True and value == pytest.approx(0.05)
    assert judged("latency(w).max from 15s to 20s < 20ms", h, c)[0] is True
    assert judged("replication_lag(db2).max from 6s to 8s >= 2s", h, c)[0] is True
    assert judged("replication_lag(db2).max from 10s to 20s < 100ms", h, c)[0] is True
    passed, value, _ = judged("stalls(w).count from 5s to 10s == 5", h, c)
    assert (passed, value) == (True, 5.0)


def test_the_window_is_written_back_as_written_and_refused_where_it_cannot_be() -> None:
    plan = plan_text(TEXT.format(metric="errors(w, 1047) from 5s to 10s > 0"))
    assert metric_text(plan.expectations[0].metric) == "errors(w, 1047).count from 5s to 10s"
    errors = [e.message for e in check_text(TEXT.format(metric="downtime(w) from 1s to 2s < 1s"))]
    assert errors == ["'from ... to' does not apply to downtime"]
    errors = [e.message for e in check_text(TEXT.format(metric="errors(w) from 5s to 25s == 0"))]
    assert errors == ["to 25s is after the end of the load (20s)"]


def test_a_window_ending_at_the_duration_reaches_the_loads_real_end() -> None:
    """The workloads' stop comes after the duration: a window to the duration takes what
    completed in that tail and what never completed, as `last` does (the reviewer's case: 5
    writes hanging from 15 s read 0 errors 'from 10s to 20s' and 5 'last 10s')."""
    from histories import history as hist

    ok = [(i * 0.1, i * 0.1 + 0.01, "ok") for i in range(150)]
    hanging = [(15.0 + i * 0.01, None) for i in range(5)]
    ops = probe(ok)
    from histories import invoke_op
    ops += [invoke_op(9, "write", t, workload="w", endpoint="db1", key=1000 + i)
            for i, (t, _) in enumerate(hanging)]
    h = hist(ops)
    c = ctx(0, 20.3, workloads={"w": "unique_writes"}, facts={"duration": 20.0})
    assert judged("errors(w) last 10s == 5", h, c)[:2] == (True, 5.0)
    assert judged("errors(w) from 10s to 20s == 5", h, c)[:2] == (True, 5.0)
    assert judged("errors(w) from 10s to 14s == 0", h, c)[:2] == (True, 0.0)


def test_a_window_with_no_second_of_the_workload_and_sysbench_errors_are_unknown() -> None:
    h = history(probe([(i * 0.1, i * 0.1 + 0.01, "ok") for i in range(80)]))  # 0 to 8 s
    c = ctx(0, 20, workloads={"w": "unique_writes"}, facts={"duration": 20.0})
    passed, _, why = judged("stalls(w).max from 12s to 20s < 1s", h, c)
    assert passed is None and "no whole second of 'w' from 12 s to 20 s" in why
    sb = ctx(0, 20, workloads={"sb": "sysbench"}, facts={"duration": 20.0},
             samples=[Sample("sysbench", "sb", round((i + 1) * 1e9), {"tps": 10.0,
                                                                      "errors": 1.0})
                      for i in range(20)])
    plan = plan_text(TEXT.format(metric="errors(w) == 0").replace(
        "workload w: unique_writes { target db1 }",
        "workload sb: sysbench oltp_read_only { target db1 }\n"
        "  workload w: unique_writes { target db1 }").replace(
        "expect errors(w) == 0", "expect errors(sb) from 5s to 10s == 0"))
    out = evaluate(plan.expectations[0], run_checkers([], sb), sb, history=[])
    assert out.passed is None and "sysbench: per-second rows" in out.explanation
