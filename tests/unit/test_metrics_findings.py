"""The language and the expectations know ``split_brain``, ``errant_gtids`` and
``divergence``."""

from __future__ import annotations

from typing import Any

import pytest
from histories import ctx, history, ns, op

from dsl.api import check_text, format_errors, plan_text
from dsl.models import Expectation, Metric, Quantity
from lab.history import Sample
from lab.judge.checkers import run_checkers
from lab.judge.expectations import evaluate, metric_text

TEXT = """experiment "f" {
  duration 12s
  topology replication { primary db1  replicas db2, db3 }
  workload w: unique_writes { target db1 }
  workload rogue: unique_writes { target db2 }
  at 5s set global read_only = OFF on db2
  expect split_brain between 1.8s and 2.25s
  expect split_brain.count == 1
  expect split_brain(rogue).writes >= 150
  expect errant_gtids(db2) == 200
  expect errant_gtids(db1) == 0
  expect divergence(rogue) == 200
  expect divergence(rogue on db3).extra == 0
  expect divergence == 200
  report errant_gtids(db3).at_least
}"""


def test_the_language_accepts_them_with_their_defaults() -> None:
    errors = check_text(TEXT, "f.exp")
    assert errors == [], format_errors(errors, {"f.exp": TEXT})
    plan = plan_text(TEXT)
    assert [e.metric.stat for e in plan.expectations] == [
        "longest", "count", "writes", "count", "count", "rows", "extra", "rows"]


@pytest.mark.parametrize("line,message", [
    ("expect split_brain < 5", "needs a duration"),
    ("expect errant_gtids < 1", "errant_gtids needs a node"),
    ("expect errant_gtids(db2).rows < 1", "has no statistic 'rows'"),
    ("expect divergence(db2) == 0", "unknown workload 'db2'"),
    ("expect split_brain last 5s < 1s", "'last' does not apply"),
])  # fmt: skip
def test_the_language_checks_them(line: str, message: str) -> None:
    text = f"""experiment "x" {{
      duration 30s
      topology replication {{ primary db1  replicas db2 }}
      workload w: unique_writes {{ target db1 }}
      {line}
    }}"""
    errors = check_text(text, "x.exp")
    assert any(message in e.message for e in errors), [e.message for e in errors]


def test_errant_gtids_are_refused_on_galera() -> None:
    errors = check_text("""experiment "g" {
      topology galera { nodes g1, g2, g3 }
      workload w: probe { target g1 }
      expect errant_gtids(g2) == 0
    }""", "g.exp")  # fmt: skip
    assert errors and "errant_gtids" in errors[0].message


def q(value: float, kind: str = "count", text: str = "") -> Quantity:
    return Quantity(value=value, kind=kind, text=text or str(value))  # type: ignore[arg-type]


def exp(name: str, op_: str, value: Quantity, **kw: Any) -> Expectation:
    m = Metric(name=name, **kw)  # type: ignore[arg-type]
    return Expectation(metric=m, op=op_, value=value,  # type: ignore[arg-type]
                       text=f"expect {metric_text(m)} {op_} {value.text}")  # fmt: skip


def _measured() -> tuple[Any, Any]:
    samples = [Sample("replication", "db1", ns(t / 5), {"read_only": 0.0}) for t in range(60)]
    samples += [Sample("replication", "db2", ns(t / 5),
                       {"read_only": 0.0 if 25 <= t < 35 else 1.0}) for t in range(60)]
    h = history(*(op(2, "write", 5.0 + i / 100, 5.0 + i / 100 + 0.001, key=i, value=i,
                     node="db2", endpoint="db2", workload="rogue") for i in range(150)),
                *(op(1, "write", i / 10, i / 10 + 0.001, key=i, value=i, node="db1",
                     endpoint="db1", workload="w") for i in range(110)))
    facts = {"topology": "replication", "errant_gtids_authority": "db1",
             "errant_gtids": {"db2": {"count": 150, "at_least": 1, "gtids": ["0-200-9"]},
                              "db3": {"count": None, "at_least": 2, "error": "purged"}},
             "divergence": {"reference": "db1", "workloads": {"rogue": ["lab.w_rogue"]},
                            "tables": {"lab.w_rogue": {
                                "rows": 150, "missing": 0, "extra": 150, "different": 0,
                                "chunks": 1, "nodes": {"db2": {"rows": 150, "missing": 0,
                                                               "extra": 150, "different": 0,
                                                               "chunks": 1},
                                                       "db3": {"rows": 0, "missing": 0,
                                                               "extra": 0, "different": 0,
                                                               "chunks": 0}}}}}}
    c = ctx(0, 12, workloads={"w": "unique_writes", "rogue": "unique_writes"},
            samples=samples, facts=facts)
    return run_checkers(h, c), c


def test_split_brain_measured() -> None:
    results, c = _measured()
    got = evaluate(exp("split_brain", "<", q(2.5, "duration", "2.5s")), results, c)
    assert got.passed is True and got.measured == pytest.approx(2.0, abs=0.01), got.explanation
    assert "1 window" in got.explanation
    writes = evaluate(exp("split_brain", ">=", q(150), subject="rogue", stat="writes"),
                      results, c)
    assert writes.passed is True and writes.measured == 150
    other = evaluate(exp("split_brain", "==", q(0), subject="w", stat="writes"), results, c)
    assert other.measured == 20  # db1's writes between 5.0 and 7.0


def test_errant_gtids_measured_unknown_and_primary() -> None:
    results, c = _measured()
    got = evaluate(exp("errant_gtids", "==", q(150), subject="db2"), results, c)
    assert got.passed is True and "0-200-9" in got.explanation
    unknown = evaluate(exp("errant_gtids", "==", q(0), subject="db3"), results, c)
    assert unknown.passed is None and "purged" in unknown.explanation
    bound = evaluate(exp("errant_gtids", "==", q(2), subject="db3", stat="at_least"), results, c)
    assert bound.passed is True
    primary = evaluate(exp("errant_gtids", "==", q(0), subject="db1"), results, c)
    assert primary.passed is True


def test_divergence_measured() -> None:
    results, c = _measured()
    assert evaluate(exp("divergence", "==", q(150), subject="rogue"), results, c).passed
    on = evaluate(exp("divergence", "==", q(0), subject="rogue", on="db3"), results, c)
    assert on.passed is True and on.measured == 0
    extra = evaluate(exp("divergence", "==", q(150), subject="rogue", on="db2", stat="extra"),
                     results, c)
    assert extra.passed is True
    total = evaluate(exp("divergence", "==", q(150)), results, c)
    assert total.passed is True
    nothing = evaluate(exp("divergence", "==", q(0), subject="w"), results, c)
    assert nothing.passed is None and "not compared" in nothing.explanation


def test_the_findings_in_the_compact_summary_and_in_show_all() -> None:
    from lab.report.measurements import measurement_rows
    from lab.report.summary_matrix import findings_lines

    results, c = _measured()
    cell = {"index": 0, "label": "#1", "measurements": {k: r.metrics for k, r in
                                                        results.items()}}
    lines = findings_lines(cell)
    assert lines[0].startswith("split brain: 2") and "± 200 ms" in lines[0]
    assert "1 window" in lines[0]
    assert lines[1] == "errant GTIDs (not on db1): db2 150, db3 ≥ 2 (binlogs unread)"
    assert lines[2] == "rows that differ from db1: lab.w_rogue 150 rows"
    rows = dict(measurement_rows({"cells": [cell]}))
    assert rows["errant_gtids(db2)"] == ["150 (0-200-9 …)"]
    assert rows["divergence(lab.w_rogue)"][0].startswith("150 rows vs db1 (missing 0, extra")
    assert rows["split_brain.writes (acknowledged inside)"][0].startswith("170")
    calm = {"index": 0, "measurements": {"split_brain": {"count": 0, "longest": 0.0}}}
    assert findings_lines(calm) == []
