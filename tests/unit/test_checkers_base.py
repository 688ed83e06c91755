from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from histories import ctx, fault, history, ns, op, probe

from lab.history import NEMESIS, Op, Sample, fault_windows, pair_ops
from lab.judge.checkers import ALL_CHECKERS, CheckContext, CheckResult, compose, run_checkers
from lab.judge.checkers.base import flatten_metrics, percentile, summary


def test_pair_ops_matches_by_process_and_keeps_completion_order() -> None:
    h = history(
        op(1, "write", 0, 2, key=1, value="a"),
        op(2, "read", 1, 1.5, key=1, value="x", node="db2"),
        op(3, "write", 1, 1.2)[:1],  # never completes
        fault("kill", 0.5, 0.7, "db1"),
    )
    p = pair_ops(h)
    assert [(c.process, c.type) for c in p.ops] == [(2, "ok"), (1, "ok"), (3, "info")]
    read = p.ops[0]
    assert read.value == "x" and read.node == "db2" and read.latency == ns(0.5)
    assert p.ops[1].value == "a"
    assert p.ops[2].incomplete and p.ops[2].end is None
    assert p.orphans == 0


def test_pair_ops_orphans_and_reinvoke() -> None:
    h = history(
        Op("ok", "write", 1, 0),
        Op("invoke", "write", 2, 1),
        Op("invoke", "write", 2, 2),  # the first invoke of 2 never completed
        Op("ok", "write", 2, 3),
    )
    p = pair_ops(h)
    assert p.orphans == 1
    # completed ops first (completion order), then those that never completed
    assert [(c.type, c.start, c.end) for c in p.ops] == [("ok", 2, 3), ("info", 1, None)]


def test_completion_key_wins_for_auto_increment_inserts() -> None:
    h = history(Op("invoke", "insert", 1, 0, key=None, value="v"),
                Op("ok", "insert", 1, 1, key=42))  # fmt: skip
    c = pair_ops(h).ops[0]
    assert c.key == 42 and c.value == "v"


def test_fault_windows_pair_by_name_and_node() -> None:
    h = history(
        fault("kill", 1, 5, "db1"),
        fault("kill", 2, 3, "db2"),
        fault("latency", 4, None, "db3"),
        Op("fail", "pause", NEMESIS, ns(6), node="db1", error_msg="no such process"),
    )
    ws = fault_windows(h)
    got = [(w.name, w.node, w.start, w.end, w.ok) for w in ws]
    assert got == [
        ("kill", "db1", ns(1), ns(5), True),
        ("kill", "db2", ns(2), ns(3), True),
        ("latency", "db3", ns(4), None, None),
        ("pause", "db1", ns(6), ns(6), False),
    ]


def boom(history: Sequence[Op], c: CheckContext) -> CheckResult:
    raise ZeroDivisionError("oops")


def test_a_checker_that_raises_yields_unknown_not_a_crash() -> None:
    h = history(probe([(0, 0.1, "ok")]))
    res = run_checkers(h, ctx(0, 1), {"boom": boom, "downtime": ALL_CHECKERS["downtime"]})
    assert res["boom"].valid is None
    assert "ZeroDivisionError: oops" in res["boom"].details
    assert res["downtime"].valid is True


def test_compose_and_all_checkers_on_empty_history() -> None:
    both = compose({"a": ALL_CHECKERS["errors"], "b": ALL_CHECKERS["latency"]})
    out = both([], ctx(0, 1))
    assert set(out) == {"a", "b"}
    assert out["a"].name == "a"
    res = run_checkers([], CheckContext())
    assert set(res) == set(ALL_CHECKERS)
    # figures read from the servers (or needing them) are unknown without them, never 0
    unknown = {"lost_writes", "split_brain", "errant_gtids", "divergence", "anomalies",
               "lost_appends", "lost_updates", "bank"}
    assert all(r.valid is not None or r.name in unknown for r in res.values()), res
    assert res["split_brain"].metrics["longest"] is None
    assert res["errant_gtids"].metrics["count"] is None
    assert res["divergence"].metrics["rows"] is None
    json.dumps({k: r.metrics for k, r in res.items()}, allow_nan=False)


def test_every_checker_metrics_are_json() -> None:
    h = history(
        probe([(i, i + 0.1, "ok" if i % 5 else "info") for i in range(30)]),
        op(7, "read", 3, 3.1, key=1, value=None, workload="w", node="db2"),
        fault("drop_caches", 15, 15),
    )
    samples = [Sample("replication", n, ns(t), {"read_only": float(n != "db1")})
               for t in range(30) for n in ("db1", "db2")]
    facts = {"authority": "db1", "topology": "replication",
             "errant_gtids": {"db2": {"count": 0, "at_least": 0, "gtids": []}},
             "divergence": {"reference": "db1", "workloads": {"w": ["lab.w_w"]},
                            "tables": {"lab.w_w": {"rows": 0, "missing": 0, "extra": 0,
                                                   "different": 0, "chunks": 0,
                                                   "nodes": {"db2": {"rows": 0}}}}}}
    res = run_checkers(h, ctx(0, 30, final_state={"w": {"db1": {1: 1}}}, samples=samples,
                              facts=facts))
    # checkers of one workload kind are unknown without such a workload (their own tests run
    # them on one: tests/unit/test_checkers_anomalies.py)
    kind_specific = {"anomalies", "lost_updates", "bank", "lost_appends"}
    for r in res.values():
        assert r.valid is not None or r.name in kind_specific, r.details
        json.dumps(r.metrics, allow_nan=False)
        for row in r.rows():
            json.dumps(row.json)


def test_flatten_metrics() -> None:
    rows = flatten_metrics(
        "c",
        {"count": 2, "ok": True, "list": [1, 2], "nan": float("nan"),
         "subjects": {"w": {"p": {"p99": 0.5}, "by_code": {"1062": 3}}}},
    )  # fmt: skip
    got = {(r.subject, r.name): (r.value, r.json) for r in rows}
    assert got[("", "count")] == (2.0, None)
    assert got[("", "ok")] == (1.0, None)
    assert got[("", "list")] == (None, [1, 2])
    assert got[("", "nan")] == (None, None)
    assert got[("w", "p.p99")] == (0.5, None)
    assert got[("w", "by_code.1062")] == (3.0, None)


def test_percentile_nearest_rank() -> None:
    xs = list(range(1, 101))
    assert percentile(xs, 50) == 50
    assert percentile(xs, 99) == 99
    assert percentile(xs, 100) == 100
    assert percentile([7], 1) == 7
    assert percentile([], 50) is None
    assert summary([])["count"] == 0
    assert summary([1, 2, 3])["mean"] == pytest.approx(2)


def test_bounds_from_history_when_not_given() -> None:
    h = history(probe([(2, 3, "ok"), (4, 5, "ok")]), fault("kill", 0, 10))
    c = CheckContext()
    assert c.bounds(h) == (ns(2), ns(5))
    assert c.duration_s(h) == pytest.approx(3.0)


def test_paired_is_cached_per_history() -> None:
    h = history(probe([(0, 1, "ok")]))
    c = ctx(0, 1)
    assert c.paired(h) is c.paired(h)
    h2 = history(probe([(0, 1, "ok")]))
    assert c.paired(h2) is not c.paired(h)
