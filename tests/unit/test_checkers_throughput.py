from __future__ import annotations

import pytest
from histories import ctx, history, ns, op, probe
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.history import Sample
from lab.judge.checkers import errors, latency, throughput
from lab.judge.checkers.throughput import check_stalls, check_throughput


def steady(n: int, per_s: int = 10, w: str = "w", start: float = 0.0, p: int = 1) -> list:  # type: ignore[type-arg]
    step = 1 / per_s
    return probe([(start + i * step, start + i * step + step / 2, "ok") for i in range(n)],
                 workload=w, process=p)  # fmt: skip


def test_per_second_counts_and_mean() -> None:
    h = history(steady(100))  # 10 ops/s for 10 s
    r = check_throughput(h, ctx(0, 10))
    s = r.metrics["subjects"]["w"]
    assert s["per_second"] == [10] * 10
    assert s["total"] == 100
    assert s["mean"] == pytest.approx(100 / s["seconds"])
    assert s["min"] == 10 and s["max"] == 10
    assert r.metrics["load_seconds"] == 10


def test_only_ok_ops_count() -> None:
    h = history(probe([(0, 0.1, "ok"), (0.2, 0.3, "fail"), (0.4, 0.5, "info"), (1, 1.1, "ok")]))
    s = check_throughput(h, ctx(0, 2)).metrics["subjects"]["w"]
    assert s["per_second"] == [1, 1]


def test_stalls_inside_the_active_window_only() -> None:
    # ops in seconds 0-2, nothing completes in 3-5 (fails), ops again in 6-9
    ops = [(i / 2, i / 2 + 0.1, "ok") for i in range(6)]
    ops += [(3 + i, 3.9 + i, "info") for i in range(3)]
    ops += [(6 + i / 2, 6 + i / 2 + 0.1, "ok") for i in range(8)]
    h = history(probe(ops))
    r = check_stalls(h, ctx(0, 10))
    s = r.metrics["subjects"]["w"]
    assert s["count"] == 3
    assert s["longest"] == 3.0
    assert s["runs"] == [{"start": 3, "end": 6, "seconds": 3}]


def test_a_workload_that_starts_late_has_no_stall_before_it_starts() -> None:
    h = history(steady(20, start=5.0))  # from 5 s to 7 s
    r = check_stalls(h, ctx(0, 10))
    assert r.metrics["subjects"]["w"]["count"] == 0
    t = check_throughput(h, ctx(0, 10)).metrics["subjects"]["w"]
    assert t["start"] == pytest.approx(5.0)
    assert t["mean"] == pytest.approx(20 / (t["end"] - t["start"]))


def test_outage_until_the_end_is_a_stall_to_the_end() -> None:
    ops = [(i / 2, i / 2 + 0.1, "ok") for i in range(10)]  # 0-5 s
    ops += [(5 + i, 6 + i, "info") for i in range(5)]  # timeouts until 10 s
    r = check_stalls(history(probe(ops)), ctx(0, 10))
    s = r.metrics["subjects"]["w"]
    assert s["count"] == 5 and s["longest"] == 5.0


def test_sysbench_from_samples() -> None:
    samples = [
        Sample("sysbench", "sb", ns(i + 1), {"tps": tps, "qps": tps * 10,
               "lat_p95": 0.005 + i / 1000, "errors": 1 if i == 3 else 0, "reconnects": 0})
        for i, tps in enumerate([100, 110, 0, 90, 100])
    ]  # fmt: skip
    c = ctx(0, 5, samples=samples, workloads={"sb": "sysbench"})
    t = check_throughput([], c).metrics["subjects"]["sb"]
    assert t["per_second"] == [100, 110, 0, 90, 100]
    assert t["mean"] == pytest.approx(80.0)
    assert t["source"] == "sysbench"
    st = check_stalls([], c).metrics["subjects"]["sb"]
    assert st["count"] == 1
    lat = latency.check([], c).metrics["subjects"]["sb"]
    assert lat["max"] == pytest.approx(0.009)
    e = errors.check([], c).metrics["subjects"]["sb"]
    assert e["total"] == 1 and e["by_code"] == {"sysbench": 1}


def test_a_sysbench_row_read_just_after_its_second_is_that_second() -> None:
    """sysbench prints the row of [0 s, 1 s) a few ms after 1 s (measured 1.023 s): it is
    second 0, not second 1 (the series sat one second late: a cpu limit from 10 s showed
    from 11 s)."""
    samples = [Sample("sysbench", "sb", ns(i + 1.023), {"tps": tps, "errors": 0})
               for i, tps in enumerate([100, 110, 50, 90])]
    c = ctx(0, 4, samples=samples, workloads={"sb": "sysbench"})
    assert check_throughput([], c).metrics["subjects"]["sb"]["per_second"] == [100, 110, 50, 90]


def test_latency_of_ok_ops() -> None:
    h = history(probe([(i, i + (i + 1) / 100, "ok") for i in range(100)]),
                op(2, "write", 0, 5, "info"))  # fmt: skip
    s = latency.check(h, ctx(0, 100)).metrics["subjects"]["w"]
    assert s["count"] == 100
    assert s["p50"] == pytest.approx(0.50)
    assert s["p99"] == pytest.approx(0.99)
    assert s["max"] == pytest.approx(1.0)
    assert s["mean"] == pytest.approx(0.505)


def test_errors_by_code_workload_and_node() -> None:
    h = history(
        op(1, "write", 0, 1, "fail", error=2013, node="db1"),
        op(1, "write", 1, 2, "info", node="db1"),
        op(1, "write", 2, 3, "ok", node="db1"),
        op(2, "write", 0, 1, "fail", error=2013, endpoint="db2", node="db2"),
        op(2, "write", 1, 1.5, "fail", endpoint="db2", node="db2"),
        op(3, "write", 2, 2.5)[:1],
    )
    r = errors.check(h, ctx(0, 10))
    s = r.metrics["subjects"]
    assert r.metrics["total"] == 5
    assert s["w"]["by_code"] == {"2013": 2, "fail": 1, "incomplete": 1, "timeout": 1}
    assert s["w"]["ops"] == 6
    assert s["w"]["ratio"] == pytest.approx(5 / 6)
    assert s["w"]["per_second"] == pytest.approx(0.5)
    assert s["w on db2"]["by_code"] == {"2013": 1, "fail": 1}


def test_errors_through_a_router_that_no_server_answered_are_a_share_of_all_sent_there(
        ) -> None:
    """4 writes through router.writer: 3 answered by db1, 1 refused before any server.
    The refused one is `w on router.writer`, 1 of the 4 sent there (it read 100%)."""
    h = history(*[op(1, "write", t, t + 0.1, endpoint="router.writer", node="db1")
                  for t in (0, 1, 2)],
                op(1, "write", 3, 3.1, "fail", error=2003, endpoint="router.writer"))
    s = errors.check(h, ctx(0, 10)).metrics["subjects"]
    assert s["w on router.writer"]["total"] == 1 and s["w on router.writer"]["ops"] == 4
    assert s["w on router.writer"]["ratio"] == pytest.approx(0.25)
    assert s["w on db1"]["ops"] == 3 and s["w"]["ops"] == 4


def test_empty_history() -> None:
    c = ctx(0, 10)
    assert throughput.check_throughput([], c).metrics["subjects"] == {}
    assert latency.check([], c).metrics["subjects"] == {}
    assert errors.check([], c).metrics["total"] == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 19.5), st.floats(0.001, 0.4),
                          st.sampled_from(["ok", "ok", "fail", "info"])), max_size=60))  # fmt: skip
def test_per_second_counts_every_ok_op_once(ops: list[tuple[float, float, str]]) -> None:
    parts = [op(i, "write", t, t + d, ty) for i, (t, d, ty) in enumerate(ops)]  # type: ignore[arg-type]
    h = history(*parts)
    s = check_throughput(h, ctx(0, 20)).metrics["subjects"].get("w")
    n_ok = sum(1 for _, _, ty in ops if ty == "ok")
    assert (s["total"] if s else 0) == n_ok
    if s:
        assert sum(s["per_second"]) == n_ok
        for sec, n in enumerate(s["per_second"]):
            assert n == sum(1 for t, d, ty in ops if ty == "ok" and sec <= t + d < sec + 1)
