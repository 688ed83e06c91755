"""The language and the expectations know ``failover`` and ``replication_errors``."""

from __future__ import annotations

import math
from typing import Any

import pytest
from histories import ctx, fault, history, ns, op

from dsl.api import check_text, format_errors, plan_text
from dsl.models import Expectation, Metric, Quantity
from lab.history import NEMESIS, Op, Sample
from lab.judge.checkers import CheckResult, run_checkers
from lab.judge.expectations import Unmeasurable, evaluate, measure, metric_text

PRIMARY_PRIMARY = """experiment "pp" {
  duration 30s
  topology primary_primary { nodes p1, p2  auto_increment_offsets off }
  workload ins: unique_insert { target p1, p2 }
  expect replication_errors(p1) >= 1
  expect replication_errors(p2).sql_errno == 1062
  expect replication_errors(p2).stopped_at < 20s
  report replication_errors(p2).sql_errno
  report replication_errors(p1).io_errno
}"""

FAILOVER = """experiment "fo" {
  duration 30s
  topology replication { primary db1  replicas db2, db3 }
  router haproxy { writer db1  reader db2 }
  workload w: probe { target router.writer }
  workload u: unique_writes { target db1 }
  at 10s kill db1
  at 12s promote db2
  expect failover < 5s
  expect failover(w) < 5s
  expect failover.new_writer_accepts < 3s
  expect failover(u).first_failure < 1s
  report failover.router_switch
  report failover(w).recovered
}"""


def test_the_language_accepts_both_metrics() -> None:
    for text in (PRIMARY_PRIMARY, FAILOVER):
        errors = check_text(text, "e.exp")
        assert errors == [], format_errors(errors, {"e.exp": text})
    plan = plan_text(PRIMARY_PRIMARY)
    assert [e.metric.stat for e in plan.expectations] == ["count", "sql_errno", "stopped_at"]
    assert [r.metric.stat for r in plan.reports] == ["sql_errno", "io_errno"]
    plan = plan_text(FAILOVER)
    assert [e.metric.stat for e in plan.expectations] == [
        "outage", "outage", "new_writer_accepts", "first_failure"]
    assert [r.metric.stat for r in plan.reports] == ["router_switch", "recovered"]


@pytest.mark.parametrize("line,message", [
    ("expect replication_errors < 1", "replication_errors needs a node"),
    ("expect replication_errors(p1).lag < 1", "has no statistic 'lag'"),
    ("expect replication_errors(p1).stopped_at < 5M", "needs a duration"),
    ("expect failover(rd) < 5s", "failover is measured on a"),
    ("expect failover.outage < 3", "failover.outage needs a duration"),
    ("expect failover.router_switch < 500ms", "failover measures the first promote"),
])  # fmt: skip
def test_the_language_checks_them(line: str, message: str) -> None:
    text = f"""experiment "x" {{
      duration 30s
      topology primary_primary {{ nodes p1, p2 }}
      workload ins: unique_insert {{ target p1 }}
      workload rd: sysbench oltp_read_only {{ target p1 }}
      {line}
    }}"""
    errors = check_text(text, "x.exp")
    if not message:
        assert errors == []
    else:
        assert any(message in e.message for e in errors), [e.message for e in errors]


def test_replication_errors_on_a_single_server_is_refused() -> None:
    errors = check_text("""experiment "s" {
      topology single { node db1 }
      workload w: probe { target db1 }
      expect replication_errors(db1) == 0
    }""", "s.exp")  # fmt: skip
    assert errors and "replica" in errors[0].message


# --- measuring them ------------------------------------------------------------------------


def q(value: float, kind: str = "count", text: str = "") -> Quantity:
    return Quantity(value=value, kind=kind, text=text or str(value))  # type: ignore[arg-type]


def exp(name: str, op_: str, value: Quantity, **kw: Any) -> Expectation:
    m = Metric(name=name, **kw)  # type: ignore[arg-type]
    return Expectation(metric=m, op=op_, value=value,  # type: ignore[arg-type]
                       text=f"expect {metric_text(m)} {op_} {value.text}")  # fmt: skip


def status(t: float, node: str, sql: bool, errno: int) -> Sample:
    return Sample("replication", node, ns(t), {
        "configured": 1.0, "io_running": 1.0, "sql_running": 1.0 if sql else 0.0,
        "sql_errno": float(errno), "io_errno": 0.0, "seconds_behind": 0.0 if sql else math.nan})


def collisions() -> tuple[dict[str, CheckResult], Any]:
    samples = []
    for i in range(150):
        t = i * 0.2
        samples.append(status(t, "p1", t < 7.0, 1062 if t >= 7.0 else 0))
        samples.append(status(t, "p2", t < 12.4, 1062 if t >= 12.4 else 0))
        samples.append(status(t, "p3", True, 0))
    c = ctx(0, 30, samples=samples, facts={"replication_messages": {
        "p1": {"1062": "Duplicate entry '7' for key 'PRIMARY'"}}})  # fmt: skip
    return run_checkers([], c), c


def test_replication_errors_measured() -> None:
    results, c = collisions()
    holds = evaluate(exp("replication_errors", ">=", q(1), subject="p1"), results, c)
    assert holds.passed is True, holds.explanation
    assert "Duplicate entry '7'" in holds.explanation
    errno = evaluate(exp("replication_errors", "==", q(1062), subject="p2", stat="sql_errno"),
                     results, c)  # fmt: skip
    assert errno.passed is True and errno.measured == 1062
    at = measure(Metric(name="replication_errors", subject="p2", stat="stopped_at"),
                 q(0), results, c)  # fmt: skip
    assert at.value == pytest.approx(12.4) and at.unit == "duration"
    clean = measure(Metric(name="replication_errors", subject="p3", stat="sql_errno"), q(0),
                    results, c)  # fmt: skip
    assert clean.value == 0
    every = measure(Metric(name="replication_errors"), q(0), results, c)
    assert every.value == 2 and "p1, p2" in every.note
    with pytest.raises(Unmeasurable, match="no replication thread of 'p3' stopped on an error"):
        measure(Metric(name="replication_errors", subject="p3", stat="stopped_at"), q(0),
                results, c)  # fmt: skip
    with pytest.raises(Unmeasurable, match="no replication status samples for 'db9'"):
        measure(Metric(name="replication_errors", subject="db9"), q(0), results, c)


def test_replication_errors_without_samples_is_unknown() -> None:
    c = ctx(0, 30)
    results = run_checkers([], c)
    got = evaluate(exp("replication_errors", ">=", q(1), subject="p1"), results, c)
    assert got.passed is None
    assert "no replication status samples" in got.explanation


def promote(start: float, end: float) -> list[Op]:
    value = {"old_primary": "db1", "new_primary": "db2"}
    return [Op("invoke", "promote", NEMESIS, ns(start), "nemesis", "", "db2"),
            Op("ok", "promote", NEMESIS, ns(end), "nemesis", "", "db2", value=value)]  # fmt: skip


def failover_history(never_back: bool = False) -> list[Op]:
    parts: list[Any] = []
    t, i = 0.0, 0
    while t < 30 - 1e-9:
        if t < 10:
            parts.append(op(1, "write", t, t + 0.05, workload="w", endpoint="router.writer",
                            node="db1", key=i, value=1))  # fmt: skip
            t = round(t + 0.1, 6)
        elif t < 13.0 or never_back:
            parts.append(op(1, "write", t, t + 0.01, "fail", workload="w",
                            endpoint="router.writer", node="db1", key=i, value=1,
                            error=2003))  # fmt: skip
            t = round(t + 0.05, 6)
        else:
            parts.append(op(1, "write", t, t + 0.05, workload="w", endpoint="router.writer",
                            node="db2", key=i, value=1))  # fmt: skip
            t = round(t + 0.1, 6)
        i += 1
    parts += [fault("kill", 10.0, 10.001, "db1"), promote(12.0, 12.1)]
    return history(*parts)


def test_failover_measured() -> None:
    h = failover_history()
    c = ctx(0, 30, workloads={"w": "probe"})
    results = run_checkers(h, c)
    outage = evaluate(exp("failover", "<", q(5, "duration", "5s")), results, c)
    assert outage.passed is True, outage.explanation
    assert outage.measured == pytest.approx(13.05 - 9.95)
    assert "promote db2, from the kill of db1" in outage.explanation
    per_w = measure(Metric(name="failover", subject="w"), q(0), results, c)
    assert per_w.value == pytest.approx(3.1)
    accepts = measure(Metric(name="failover", stat="new_writer_accepts"), q(0), results, c)
    assert accepts.value == pytest.approx(3.05)
    switch = measure(Metric(name="failover", stat="router_switch"), q(0), results, c)
    assert switch.value == pytest.approx(3.05)
    first = measure(Metric(name="failover", stat="first_failure"), q(0), results, c)
    assert first.value == pytest.approx(0.01)
    with pytest.raises(Unmeasurable, match="workload 'nope' wrote nothing"):
        measure(Metric(name="failover", subject="nope"), q(0), results, c)


def test_failover_never_recovered_is_a_lower_bound() -> None:
    h = failover_history(never_back=True)
    c = ctx(0, 30, workloads={"w": "probe"})
    results = run_checkers(h, c)
    got = evaluate(exp("failover", "<", q(5, "duration", "5s")), results, c)
    assert got.passed is False and got.lower_bound is True
    assert got.measured == pytest.approx(30 - 9.95)
    rec = measure(Metric(name="failover", stat="recovered"), q(0), results, c)
    assert rec.lower_bound and rec.value == pytest.approx(20.0)
    unknown = evaluate(exp("failover", "<", q(5, "duration", "5s"), stat="new_writer_accepts"),
                       results, c)  # fmt: skip
    assert unknown.passed is None
    assert "no write was answered by the new primary db2" in unknown.explanation


def test_failover_without_a_promote_is_unknown() -> None:
    h = history(op(1, "write", 0, 0.1, workload="w", node="db1", key=1, value=1))
    c = ctx(0, 5)
    got = evaluate(exp("failover", "<", q(5, "duration", "5s")), run_checkers(h, c), c)
    assert got.passed is None and "no promote in the history" in got.explanation
