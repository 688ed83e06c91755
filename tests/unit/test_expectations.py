from __future__ import annotations

from typing import Any

import pytest
from histories import ctx, fault, history, ns, op, probe

from dsl.models import Expectation, Metric, Quantity
from lab.figures_format import format_value
from lab.history import Op, Sample
from lab.judge.checkers import CheckResult, run_checkers
from lab.judge.checkers.base import CheckContext
from lab.judge.expectations import (
    ExpectationOutcome,
    all_passed,
    compare,
    compare_lower_bound,
    evaluate,
    evaluate_all,
    metric_text,
)

UNITS = {"s": "duration", "%": "percent", "/s": "rate", "B": "size", "": "count"}


def q(text: str) -> Quantity:
    """``'5s'``, ``'1%'``, ``'100/s'``, ``'4096B'``, ``'3'``."""
    if text.endswith("ms"):
        return Quantity(value=float(text[:-2]) / 1000, kind="duration", text=text)
    for suffix in ("/s", "s", "%", "B"):
        if text.endswith(suffix):
            num = float(text[: -len(suffix)])
            kind = UNITS[suffix]
            return Quantity(value=num / 100 if suffix == "%" else num, kind=kind, text=text)  # type: ignore[arg-type]
    return Quantity(value=float(text), kind="count", text=text)


def expect(metric: str, op_: str, value: str, **kw: Any) -> Expectation:
    m = Metric(name=metric, **kw)  # type: ignore[arg-type]
    text = f"expect {metric_text(m)} {op_} {value}"
    return Expectation(metric=m, op=op_, value=q(value), text=text)  # type: ignore[arg-type]


def build() -> tuple[list[Op], CheckContext]:
    parts: list[Any] = []
    # probe p on router.writer: ok every 0.1 s for 30 s, outage from 10.0 to 12.55
    steps = []
    t = 0.0
    while t < 30:
        ty = "info" if 10.05 <= t < 12.5 else "ok"
        steps.append((t, t + 0.05, ty))
        t = round(t + 0.1, 3)
    parts.append(probe(steps, workload="p", endpoint="router.writer", process=1))
    # read-your-writes: write k at 1+2i, read on db2 (stale once) and db3
    for i in range(10):
        t0 = 1 + 2 * i
        parts.append(op(10, "write", t0, t0 + 0.1, key=i, value=1, workload="ryw", node="db1"))
        stale_first = i == 3
        parts.append(op(11, "read", t0 + 0.2, t0 + 0.3, key=i, value=None if stale_first else 1,
                        workload="ryw", endpoint="db2", node="db2"))  # fmt: skip
        if stale_first:
            parts.append(op(11, "read", t0 + 0.4, t0 + 0.5, key=i, value=1, workload="ryw",
                            endpoint="db2", node="db2"))  # fmt: skip
        parts.append(op(12, "read", t0 + 0.2, t0 + 0.3, key=i, value=1, workload="ryw",
                        endpoint="db3", node="db3"))  # fmt: skip
    # unique inserts on two primaries, two duplicates on db2
    for i in range(20):
        parts.append(op(20, "insert", i, i + 0.1, key=i, value=i, workload="ins", endpoint="db1",
                        node="db1"))  # fmt: skip
    parts.append(op(21, "insert", 3, 3.1, "fail", key=3, value=3, workload="ins",
                    endpoint="db2", node="db2", error=1062))  # fmt: skip
    parts.append(op(21, "insert", 4, 4.1, "fail", key=4, value=4, workload="ins",
                    endpoint="db2", node="db2", error=1062))  # fmt: skip
    parts.append(fault("kill", 10.0, 12.0, "db1"))
    h = history(*parts)
    samples = [Sample("lag", "db2", ns(i / 2), {"lag": 0.5 if i == 40 else 0.01})
               for i in range(60)]  # fmt: skip
    samples += [Sample("sysbench", "sb", ns(i + 1), {"tps": 100.0, "lat_p95": 0.02,
                "errors": 0.0, "reconnects": 0.0}) for i in range(30)]  # fmt: skip
    final = {
        # db1 acknowledged all 20 inserts and lacks key 19 at the end: 1 lost
        "ins": {"db1": {i: i for i in range(19)}, "db2": {i: i for i in range(20)}},
    }
    c = ctx(0, 30, workloads={"p": "probe", "ryw": "read_your_writes", "ins": "unique_insert",
                              "sb": "sysbench"},
            final_state=final, samples=samples,
            facts={"missing_transactions": {"db2": 0, "db3": 2},
                   "relay_log_bytes": {"db2": {"before": 1024, "after": 5120}}})  # fmt: skip
    return h, c


@pytest.fixture(scope="module")
def world() -> tuple[dict[str, CheckResult], CheckContext, list[Op]]:
    h, c = build()
    return run_checkers(h, c), c, h


def ev(world: Any, e: Expectation) -> ExpectationOutcome:
    results, c, _ = world
    return evaluate(e, results, c)


def test_downtime_holds_and_fails_with_explanation(world: Any) -> None:
    ok = ev(world, expect("downtime", "<", "5s", subject="p"))
    assert ok.passed is True
    assert ok.measured == pytest.approx(2.5)  # last ok 10.05 -> first ok 12.55
    assert ok.unit == "duration"
    assert ok.metric == "downtime(p).max"
    assert "downtime(p).max = 2.50 s" in ok.explanation and "holds" in ok.explanation
    bad = ev(world, expect("downtime", "<", "1s", subject="p"))
    assert bad.passed is False and "fails" in bad.explanation
    assert bad.text == "expect downtime(p) < 1s"
    assert ev(world, expect("downtime", "==", "1", subject="p", stat="count")).passed is True
    assert ev(world, expect("downtime", "<", "10s")).passed is True  # over every workload


def test_unknown_workload_is_explained(world: Any) -> None:
    o = ev(world, expect("downtime", "<", "5s", subject="nope"))
    assert o.passed is None and o.measured is None
    assert "no workload named 'nope'" in o.explanation
    assert "ins, p, ryw, sb" in o.explanation


def test_unknown_stat_is_explained(world: Any) -> None:
    o = ev(world, expect("downtime", "<", "5s", subject="p", stat="p42"))
    assert o.passed is None and "has no '.p42'" in o.explanation


def test_unit_mismatch_is_unknown(world: Any) -> None:
    o = ev(world, expect("downtime", "<", "5%", subject="p"))
    assert o.passed is None and "cannot be compared" in o.explanation


def test_open_outage_is_a_lower_bound() -> None:
    h = history(probe([(0, 0.1, "ok"), (5, 5.1, "ok"), (6, 7, "info"), (7, 8, "info")]))
    c = ctx(0, 10)
    res = run_checkers(h, c)
    undecided = evaluate(expect("downtime", "<", "10s", subject="w"), res, c)
    assert undecided.passed is None and undecided.lower_bound
    assert "downtime(w).max ≥ 4.90 s (still down at end; 1 outage window" in \
        undecided.explanation
    assert evaluate(expect("downtime", "<", "3s", subject="w"), res, c).passed is False
    assert evaluate(expect("downtime", ">", "3s", subject="w"), res, c).passed is True


def test_stale_reads(world: Any) -> None:
    assert ev(world, expect("stale_reads", "==", "1", subject="ryw")).passed is True
    on3 = ev(world, expect("stale_reads", "==", "0", subject="ryw", on="db3"))
    assert on3.passed is True and on3.metric == "stale_reads(ryw on db3).count"
    assert ev(world, expect("stale_reads", "==", "1", on="db2")).passed is True
    ratio = ev(world, expect("stale_reads", "<", "10%", subject="ryw"))  # percent -> ratio
    assert ratio.metric.endswith(".ratio") and ratio.unit == "percent"
    assert ratio.measured == pytest.approx(1 / 21)  # 20 reads + the re-read on db2
    assert ratio.passed is True
    vis = ev(world, expect("stale_reads", "<", "1s", subject="ryw", stat="p99"))
    assert vis.measured == pytest.approx(0.4) and vis.passed is True
    missing = ev(world, expect("stale_reads", "==", "0", subject="ryw", on="db9"))
    assert missing.passed is None and "no reads on 'db9'" in missing.explanation


def test_stale_ratio_undefined_without_eligible_reads() -> None:
    h = history(op(1, "read", 0, 0.1, key=1, value=None))
    c = ctx(0, 1)
    o = evaluate(expect("stale_reads", "<", "1%", subject="w"), run_checkers(h, c), c)
    assert o.passed is None and "undefined" in o.explanation


def test_duplicate_keys_and_lost_writes(world: Any) -> None:
    assert ev(world, expect("duplicate_keys", "==", "2", subject="ins")).passed is True
    assert ev(world, expect("duplicate_keys", "==", "2", subject="ins", on="db2")).passed is True
    assert ev(world, expect("duplicate_keys", "==", "0", subject="p")).passed is True
    assert ev(world, expect("duplicate_keys", "==", "2")).passed is True
    assert ev(world, expect("lost_writes", "==", "1", subject="ins")).passed is True
    assert ev(world, expect("lost_writes", "==", "1", subject="ins", on="db1")).passed is True
    lw = ev(world, expect("lost_writes", "<", "10%", subject="ins"))
    assert lw.measured == pytest.approx(1 / 20)
    assert ev(world, expect("lost_writes", "==", "1")).passed is True
    no = ev(world, expect("lost_writes", "==", "0", subject="ryw"))
    assert no.passed is None and "no final state" in no.explanation


def test_facts(world: Any) -> None:
    assert ev(world, expect("missing_transactions", "==", "0", subject="db2")).passed is True
    assert ev(world, expect("missing_transactions", "==", "2")).passed is True  # all nodes
    o = ev(world, expect("missing_transactions", "==", "0", subject="db7"))
    assert o.passed is None and "not measured on 'db7'" in o.explanation
    after = ev(world, expect("relay_log_bytes", "<", "8192B", subject="db2"))
    assert after.passed is True and after.metric.endswith(".final")
    assert ev(world, expect("relay_log_bytes", "==", "4096B", subject="db2",
                            stat="growth")).passed is True  # fmt: skip
    assert ev(world, expect("relay_log_bytes", "==", "1024B", subject="db2",
                            stat="before")).passed is True  # fmt: skip


def test_facts_not_measured() -> None:
    c = CheckContext()
    o = evaluate(expect("missing_transactions", "==", "0", subject="db2"), run_checkers([], c), c)
    assert o.passed is None and "did not measure missing transactions" in o.explanation


def test_replication_lag(world: Any) -> None:
    mx = ev(world, expect("replication_lag", "<", "1s", subject="db2"))
    assert mx.measured == pytest.approx(0.5) and mx.passed is True
    assert ev(world, expect("replication_lag", "<", "20ms", subject="db2",
                            stat="p50")).passed is True  # fmt: skip
    last = ev(world, expect("replication_lag", "<", "20ms", subject="db2", last=5.0))
    assert last.passed is True and last.measured == pytest.approx(0.01)
    assert ev(world, expect("replication_lag", "<", "1s")).passed is True
    o = ev(world, expect("replication_lag", "<", "1s", subject="db3"))
    assert o.passed is None and "no replication lag samples for 'db3'" in o.explanation


def test_throughput_latency_errors_stalls(world: Any) -> None:
    thr = ev(world, expect("throughput", ">", "5/s", subject="p"))
    assert thr.passed is True and thr.unit == "rate"
    last = ev(world, expect("throughput", ">=", "10/s", subject="p", last=10.0))
    assert last.measured == pytest.approx(10.0) and last.passed is True
    sb = ev(world, expect("throughput", ">=", "100/s", subject="sb"))
    assert sb.passed is True
    lat = ev(world, expect("latency", "<", "100ms", subject="p"))
    assert lat.measured == pytest.approx(0.05) and lat.passed is True
    assert ev(world, expect("latency", "<", "100ms", subject="p", last=5.0)).passed is True
    assert ev(world, expect("latency", "<", "100ms", subject="sb", stat="max")).passed is True
    errs = ev(world, expect("errors", ">", "10", subject="p"))
    assert errs.passed is True
    assert ev(world, expect("errors", "==", "2", subject="ins", code=1062)).passed is True
    assert ev(world, expect("errors", "==", "0", subject="ins", code=1213)).passed is True
    ratio = ev(world, expect("errors", "<", "20%", subject="p"))
    assert ratio.metric.endswith(".ratio") and ratio.passed is True
    rate = ev(world, expect("errors", "<", "1/s", subject="p", stat="rate"))
    assert rate.measured == pytest.approx(25 / 30, rel=0.1)
    assert ev(world, expect("errors", "==", "0", subject="p", last=10.0)).passed is True
    st = ev(world, expect("stalls", "==", "1", subject="p"))  # second 11 only
    assert st.passed is True, st.explanation
    assert ev(world, expect("stalls", "==", "1s", subject="p", stat="max")).passed is True
    assert ev(world, expect("stalls", "==", "0", subject="p", last=10.0)).passed is True


def test_warmup() -> None:
    levels = [100] * 10 + [20, 40, 60, 95, 100, 100, 100, 100, 100, 100]
    ops: list[Any] = []
    for s, n in enumerate(levels):
        ops += [(s + i / n, s + i / n + 0.001, "ok") for i in range(n)]
    h = history(probe(ops), fault("drop_caches", 10.0, 10.0))
    c = ctx(0, 20)
    res = run_checkers(h, c)
    o = evaluate(expect("warmup", "<", "5s", subject="w"), res, c)
    assert o.passed is True and o.measured == pytest.approx(3.0)
    assert "after the cache drop" in o.explanation
    o = evaluate(expect("warmup", "<", "2s", subject="w", stat="time"), res, c)
    assert o.passed is False


def test_a_failed_checker_makes_expectations_unknown() -> None:
    res = {"downtime": CheckResult("downtime", None, {}, "checker raised KeyError: 'x'\n...")}
    o = evaluate(expect("downtime", "<", "1s", subject="p"), res, CheckContext())
    assert o.passed is None
    assert "the downtime checker failed: checker raised KeyError" in o.explanation


def test_evaluate_all_and_all_passed(world: Any) -> None:
    results, c, _ = world
    outs = evaluate_all([expect("downtime", "<", "5s", subject="p"),
                         expect("downtime", "<", "5s", subject="x")], results, c)  # fmt: skip
    assert [o.passed for o in outs] == [True, None]
    assert not all_passed(outs)
    assert all_passed(outs[:1])
    assert outs[0].to_json()["passed"] is True


def test_compare_and_lower_bounds() -> None:
    assert compare(1.0, "<", 2) and not compare(2.0, "<", 2) and compare(2.0, "<=", 2)
    assert compare(0.1 + 0.2, "==", 0.3) and compare(1, "!=", 2)
    assert compare_lower_bound(6, "<", 5) is False
    assert compare_lower_bound(3, "<", 5) is None
    assert compare_lower_bound(6, ">", 5) is True
    assert compare_lower_bound(3, ">", 5) is None
    assert compare_lower_bound(6, "==", 5) is False and compare_lower_bound(6, "!=", 5) is True


def test_format_value() -> None:
    assert format_value(0.25, "duration") == "250 ms"
    assert format_value(2.5, "duration") == "2.50 s"
    assert format_value(0.005, "percent") == "0.5%"
    assert format_value(3, "count") == "3"
    assert format_value(5 * 2**20, "size") == "5.00 MiB"
    assert format_value(None, "count") == "unknown"


def test_every_statistic_of_the_language_is_understood(world: Any) -> None:
    """Cross-check with the language's metric table: no statistic it allows is refused."""
    metrics = pytest.importorskip("dsl.metrics")
    subjects = {"workload": "p", "optional_workload": "ins", "node": "db2"}
    special = {"stale_reads": "ryw", "duplicate_keys": "ins", "lost_writes": "ins",
               "throughput": "p", "warmup": "p"}  # fmt: skip
    for name, spec in metrics.METRICS.items():
        for stat in spec.stats:
            subj = special.get(name, subjects[spec.subject])
            o = ev(world, expect(name, "<", "1", subject=subj, stat=stat))
            assert "has no '." not in o.explanation, (name, stat, o.explanation)
            assert "evaluating failed" not in o.explanation, (name, stat, o.explanation)


def test_every_metric_of_the_language_names_its_reader() -> None:
    """One table per metric: dsl.metrics names the function that reads each metric."""
    from dsl.metrics import METRICS
    from lab.judge.expectations import READERS

    assert {spec.reader for spec in METRICS.values()} == set(READERS)


def test_visibility_with_writes_never_seen_is_a_lower_bound() -> None:
    """A delayed replica: writes acknowledged at 1 s, 2 s, 3 s; reads of db3 see the first
    after 4.6 s, never the other two (the last read missed them 3.8 s and 3.2 s after their
    acks). p50 and max can only be bounds (`p50 < 6s` must not pass), and say so."""
    h = history(
        op(1, "write", 0.9, 1.0, key=1, value=1, workload="ryw", endpoint="db1"),
        op(1, "write", 1.9, 2.0, key=2, value=1, workload="ryw", endpoint="db1"),
        op(1, "write", 2.9, 3.0, key=3, value=1, workload="ryw", endpoint="db1"),
        op(2, "read", 5.5, 5.6, key=1, value=1, workload="ryw", endpoint="db3", node="db3"),
        op(2, "read", 5.7, 5.8, key=2, value=None, workload="ryw", endpoint="db3", node="db3"),
        op(2, "read", 6.1, 6.2, key=3, value=None, workload="ryw", endpoint="db3", node="db3"),
    )
    c = ctx(0, 7)
    res = run_checkers(h, c)
    p50 = evaluate(expect("stale_reads", "<", "6s", subject="ryw", stat="p50"), res, c)
    assert p50.lower_bound and p50.passed is None, p50.explanation
    assert "stale_reads(ryw).p50 ≥ 3.80 s (writes never seen" in p50.explanation
    assert "2 never seen" in p50.explanation and "1 writes read back" in p50.explanation
    assert evaluate(expect("stale_reads", ">", "3s", subject="ryw", stat="max"), res,
                    c).passed is True


def test_a_visibility_percentile_between_its_bounds_decides_when_both_agree() -> None:
    """A replica fed the binlog 2 s late: 100 writes seen after 2.000–2.019 s, 4 written in
    the last 2 s of the load never seen. p50 is at least its pooled value and at most the
    p50 with those 4 put last: both under 2.07 s, so `p50 < 2.07s` holds (it was undecided);
    p99 has no upper end (its rank falls among the unseen)."""
    from lab.judge.checkers.stale_reads import percentile_uppers

    times = [2_000_000_000 + i * 200_000 for i in range(100)]
    bounds = [500_000_000, 1_000_000_000, 1_500_000_000, 1_900_000_000]
    pooled = sorted(times + bounds)
    vis = {"count": 104, "seen": 100, "unseen": 4, "never_seen": 4,
           "unseen_min_bound": 0.5, "p50": pooled[51] / 1e9, "p99": pooled[102] / 1e9,
           "upper": percentile_uppers(times, 4, scale=1e-9)}
    assert vis["upper"]["p50"] == pytest.approx(2.0102) and vis["upper"]["p99"] is None
    res = {"stale_reads": CheckResult("stale_reads", True, {"subjects": {
        "r on db2": {"count": 104, "eligible_reads": 104, "rate": 1.0, "visibility": vis},
        "r": {"count": 104, "eligible_reads": 104, "rate": 1.0, "visibility": vis}}})}
    c = ctx(0, 30)
    p50 = evaluate(expect("stale_reads", "<", "2.07s", subject="r", on="db2", stat="p50"),
                   res, c)
    assert p50.passed is True and p50.lower_bound, p50.explanation
    assert p50.explanation.startswith("stale_reads(r on db2).p50 = 2.01 s to 2.01 s (")
    assert evaluate(expect("stale_reads", ">=", "2s", subject="r", on="db2", stat="p50"),
                    res, c).passed is True
    assert evaluate(expect("stale_reads", "<", "2.01s", subject="r", on="db2", stat="p50"),
                    res, c).passed is None
    p99 = evaluate(expect("stale_reads", "<", "2.07s", subject="r", on="db2", stat="p99"),
                   res, c)
    assert p99.passed is None and "only a lower bound" in p99.explanation


def test_a_figure_known_within_two_ends_is_decided_only_when_every_value_agrees() -> None:
    from lab.judge.expectations import compare_interval

    assert compare_interval(2.0, 2.02, "<", 2.07) is True
    assert compare_interval(2.0, 2.1, "<", 2.07) is None
    assert compare_interval(2.1, 2.2, "<", 2.07) is False
    assert compare_interval(0.8, 2.5, "<", 3.0) is True
    # between: both ends outside on opposite sides is not a failure: the value may be inside
    assert compare_interval(0.8, 2.5, "between", 1.0, 2.0) is None
    assert compare_interval(1.2, 1.8, "between", 1.0, 2.0) is True
    assert compare_interval(2.1, 2.5, "between", 1.0, 2.0) is False
    assert compare_interval(0.1, 0.5, "between", 1.0, 2.0) is False
    assert compare_interval(1.0, 3.0, "!=", 2.0) is None
    assert compare_interval(1.0, 3.0, "!=", 4.0) is True
    assert compare_interval(1.0, 3.0, "==", 2.0) is None
    assert compare_interval(1.0, 3.0, "==", 4.0) is False


def test_a_heal_that_changed_missing_transactions_says_the_figure_before_it() -> None:
    """The primary was killed without `for good`: the heal at the end restarted it and r1
    caught up, so `missing_transactions(r1) == 5000` read 0 with no hint of the 5,000."""
    c = CheckContext(facts={"missing_transactions": {"r1": 0},
                            "missing_before_heal": {"r1": 5000}})
    o = evaluate(expect("missing_transactions", "==", "5000", subject="r1"),
                 run_checkers([], c), c)
    assert o.passed is False
    assert "5,000 before the heal at the end (.before_heal; `for good` leaves the fault)" \
        in o.explanation
    same = CheckContext(facts={"missing_transactions": {"r1": 5000},
                               "missing_before_heal": {"r1": 5000}})
    o = evaluate(expect("missing_transactions", "==", "5000", subject="r1"),
                 run_checkers([], same), same)
    assert o.passed is True and "before the heal" not in o.explanation
