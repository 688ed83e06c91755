from __future__ import annotations

import pytest
from histories import S, ctx, fault, history, invoke_op, ns, op, probe
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.history import pair_ops
from lab.judge.checkers import downtime
from lab.judge.checkers.downtime import outage_windows


def run(h, c=None):  # type: ignore[no-untyped-def]
    return downtime.check(h, c or ctx(0, 10))


def test_no_failures_no_windows() -> None:
    h = history(probe([(i, i + 0.1, "ok") for i in range(10)]))
    r = run(h)
    assert r.valid is True
    w = r.metrics["subjects"]["w"]
    assert (w["count"], w["longest"], w["total"]) == (0, 0.0, 0.0)
    assert r.metrics["longest"] == 0.0


def test_outage_from_last_ok_to_first_ok_after() -> None:
    h = history(
        probe([(0, 0.1, "ok"), (1, 1.1, "ok"), (2, 3, "info"), (3, 3.5, "fail"), (4, 4.2, "ok"),
               (5, 5.1, "ok")])
    )  # fmt: skip
    w = run(h).metrics["subjects"]["w"]
    assert w["count"] == 1
    win = w["windows"][0]
    assert win["start"] == pytest.approx(1.1)
    assert win["end"] == pytest.approx(4.2)
    assert win["duration"] == pytest.approx(3.1)
    assert win["failures"] == 2
    assert win["errors"] == {"timeout": 1, "fail": 1}
    assert not win["open_at_end"] and not win["from_start"]
    assert w["longest"] == pytest.approx(3.1)


def test_info_and_fail_both_open_an_outage_and_error_codes_are_kept() -> None:
    h = history(
        probe([(0, 0.1, "ok"), (1, 1.5, "info"), (2, 2.1, "ok"), (3, 3.1, "fail"), (4, 4.1, "ok")],
              ),
    )  # fmt: skip
    w = run(h).metrics["subjects"]["w"]
    assert w["count"] == 2
    assert [x["errors"] for x in w["windows"]] == [{"timeout": 1}, {"fail": 1}]
    assert w["total"] == pytest.approx((2.1 - 0.1) + (4.1 - 2.1))


def test_error_code_label() -> None:
    h = history(op(1, "write", 0, 0.1), op(1, "write", 1, 1.1, "fail", error=2013),
                op(1, "write", 2, 2.1))  # fmt: skip
    win = run(h).metrics["subjects"]["w"]["windows"][0]
    assert win["errors"] == {"2013": 1}


def test_outage_at_the_start() -> None:
    h = history(probe([(0.2, 1.2, "info"), (1.3, 1.4, "fail"), (2, 2.1, "ok")]))
    w = run(h).metrics["subjects"]["w"]
    win = w["windows"][0]
    assert win["from_start"] is True
    assert win["start"] == pytest.approx(0.2)  # the first invoke
    assert win["end"] == pytest.approx(2.1)
    assert w["from_start"] is True


def test_outage_open_at_the_end_closes_at_load_end_and_is_flagged() -> None:
    h = history(probe([(0, 0.1, "ok"), (5, 5.1, "ok"), (6, 7, "info"), (7, 8, "info")]))
    r = run(h, ctx(0, 10))
    w = r.metrics["subjects"]["w"]
    win = w["windows"][-1]
    assert win["open_at_end"] is True
    assert win["start"] == pytest.approx(5.1)
    assert win["end"] == pytest.approx(10.0)
    assert w["longest"] == pytest.approx(4.9)
    assert w["longest_open_at_end"] is True
    assert r.metrics["open_at_end"] is True
    assert "still open" in r.details


def test_incomplete_op_at_the_end_counts_as_unknown() -> None:
    h = history(probe([(0, 0.1, "ok"), (1, 1.1, "ok")]), op(1, "write", 2, 2)[:1])
    w = run(h, ctx(0, 5)).metrics["subjects"]["w"]
    assert w["count"] == 1
    assert w["windows"][0]["errors"] == {"incomplete": 1}
    assert w["windows"][0]["end"] == pytest.approx(5.0)


def test_duplicate_key_errors_are_answers_not_outages() -> None:
    h = history(
        op(1, "insert", 0, 0.1, key=1),
        op(1, "insert", 1, 1.1, "fail", key=1, error=1062),
        op(1, "insert", 2, 2.1, "fail", key=2, error=11000),
        op(1, "insert", 3, 3.1, key=3),
    )
    assert run(h).metrics["subjects"]["w"]["count"] == 0


def test_workload_windows_are_the_union_of_its_endpoints() -> None:
    a = probe([(0, 0.1, "ok"), (1, 1.1, "fail"), (3, 3.1, "ok")], process=1, endpoint="db1")
    b = probe([(0, 0.1, "ok"), (2, 2.1, "fail"), (5, 5.1, "ok")], process=2, endpoint="db2")
    s = run(history(a, b)).metrics["subjects"]
    assert s["w on db1"]["windows"][0]["start"] == pytest.approx(0.1)
    assert s["w on db1"]["windows"][0]["end"] == pytest.approx(3.1)
    assert s["w on db2"]["windows"][0]["end"] == pytest.approx(5.1)
    assert s["w"]["count"] == 1
    assert s["w"]["longest"] == pytest.approx(5.0)
    assert s["w"]["endpoints"] == ["db1", "db2"]


def test_workloads_are_separate_and_overall_is_the_worst() -> None:
    a = probe([(0, 0.1, "ok"), (1, 1.1, "fail"), (2, 2.1, "ok")], workload="a", process=1)
    b = probe([(0, 0.1, "ok"), (1, 1.1, "fail"), (4, 4.1, "ok")], workload="b", process=2)
    r = run(history(a, b))
    assert r.metrics["subjects"]["a"]["longest"] == pytest.approx(2.0)
    assert r.metrics["subjects"]["b"]["longest"] == pytest.approx(4.0)
    assert r.metrics["longest"] == pytest.approx(4.0)
    # a's window lies inside b's: one window of the union, as the total is b's span
    assert r.metrics["count"] == 1
    assert r.metrics["total"] == pytest.approx(4.0)


def test_faults_in_the_history_are_ignored() -> None:
    h = history(probe([(0, 0.1, "ok"), (1, 1.1, "ok")]), fault("kill", 0.5, 0.6, "db1"))
    assert run(h).metrics["subjects"]["w"]["count"] == 0


def test_times_relative_to_load_start() -> None:
    h = history(probe([(100, 100.1, "ok"), (101, 101.1, "fail"), (102, 102.1, "ok")]))
    win = run(h, ctx(100, 110)).metrics["subjects"]["w"]["windows"][0]
    assert win["start"] == pytest.approx(0.1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["ok", "fail", "info"]), st.integers(1, 50)),
                max_size=40))  # fmt: skip
def test_windows_cover_every_failure_and_no_ok(steps: list[tuple[str, int]]) -> None:
    t = 0.0
    times = []
    for ty, dur in steps:
        times.append((t, t + dur / 100, ty))
        t += dur / 100 + 0.01
    end = t + 1
    h = history(probe(times))
    paired = pair_ops(h).ops
    windows = outage_windows(paired, ns(end), ordered=True)
    # disjoint and ordered
    for a, b in zip(windows, windows[1:], strict=False):
        assert a.end <= b.start
    for c in paired:
        assert c.end is not None
        inside = [w for w in windows if w.start <= c.end <= w.end]
        if c.type != "ok":
            assert inside, "every failure lies in a window"
        else:
            assert not [w for w in windows if w.start < c.end < w.end]
    assert sum(w.end - w.start for w in windows) <= ns(end)
    assert sum(w.failures for w in windows) == sum(1 for c in paired if c.type != "ok")
    r = downtime.check(h, ctx(0, end))
    assert r.metrics["subjects"].get("w", {"count": 0})["count"] == len(windows)
    assert all(w.end - w.start >= 0 for w in windows)
    assert all(w.start >= 0 and w.end <= ns(end) + S for w in windows)


def _probe_every(t0: float, t1: float, interval: float = 0.01, latency: float = 0.001
                 ) -> list[tuple[float, float, str]]:
    out = []
    t = t0
    while t < t1:
        out.append((t, t + latency, "ok"))
        t += interval
    return out


def test_a_hang_ending_in_ok_is_downtime() -> None:
    """The primary frozen (SIGSTOP) for 0.5 s under a 10 ms probe: the write in flight waits
    0.5 s and succeeds. By hand the gap between successful writes is 0.511 s; the old checker
    reported 0 s because nothing failed."""
    times = _probe_every(0, 5)
    times = [x for x in times if x[0] < 2.0] + [(2.0, 2.5, "ok")] + \
        [x for x in _probe_every(2.51, 5)]
    h = history(probe(times))
    w = run(h, ctx(0, 5)).metrics["subjects"]["w"]
    assert w["count"] == 1 and w["stalls"] == 1
    assert w["longest"] == pytest.approx(0.5 + 0.01 - 0.001, abs=0.002)
    assert w["windows"][0]["kind"] == "stall"


def test_a_30s_hang_ending_in_ok_is_30s_of_downtime() -> None:
    times = _probe_every(0, 1) + [(1.0, 31.0, "ok")] + _probe_every(31.01, 32)
    w = run(history(probe(times)), ctx(0, 32)).metrics["subjects"]["w"]
    assert w["longest"] == pytest.approx(30.01, abs=0.01)


def test_slow_but_under_the_stall_threshold_is_not_downtime() -> None:
    times = [(t, t + 0.15, "ok") for t in (0, 0.16, 0.32, 0.48)]
    assert run(history(probe(times)), ctx(0, 1)).metrics["subjects"]["w"]["count"] == 0


def test_an_idle_client_is_not_down_only_its_slow_op_is() -> None:
    # a reader idle for 3 s then one read that takes 0.3 s: 0.3 s down, not 3.3 s
    h = history(probe([(0, 0.001, "ok"), (3.0, 3.3, "ok")]))
    w = run(h, ctx(0, 4)).metrics["subjects"]["w"]
    assert w["longest"] == pytest.approx(0.3)


def test_a_client_blocked_at_the_end_is_still_down() -> None:
    h = history(probe([(0, 0.001, "ok")]), invoke_op(1, "write", 1.0, workload="w",
                                                     endpoint="db1", key=9))
    w = run(h, ctx(0, 5)).metrics["subjects"]["w"]
    assert w["open_at_end"] and w["longest"] == pytest.approx(5 - 0.001)


def test_total_is_the_union_across_workloads_not_the_sum() -> None:
    a = probe([(0, 0.1, "ok"), (1, 1.1, "fail"), (3, 3.1, "ok")], workload="a", process=1)
    b = probe([(0, 0.1, "ok"), (1, 1.1, "fail"), (3, 3.1, "ok")], workload="b", process=2)
    m = run(history(a, b), ctx(0, 4)).metrics
    assert m["subjects"]["a"]["total"] == pytest.approx(3.0)
    assert m["total"] == pytest.approx(3.0)  # both down at the same time: 3 s, not 6 s
    assert m["count"] == 1  # and one window, not two: the count is the union's as well


def test_clients_hung_together_through_an_outage_are_one_window() -> None:
    """Four clients' writes started during an outage all succeed within a millisecond when it
    ends (measured on Galera after a pause): the first closes the error window; the others'
    hangs leave no time without a success, so they add no window (they added three of
    0.2–0.4 ms, and `downtime.count` read 5 where 2 was right)."""
    ops = [*op(1, "write", 0.0, 0.001, workload="w", endpoint="r", key=1),
           *op(1, "write", 0.01, 1.0, "fail", workload="w", endpoint="r", key=2, error=2013)]
    for i, (t0, t1) in enumerate([(1.5, 2.4964), (1.5, 2.4968), (1.5, 2.4970),
                                  (1.5, 2.4973)], start=2):
        ops += op(i, "write", t0, t1, workload="w", endpoint="r", key=10 + i)
    w = run(history(ops), ctx(0, 3)).metrics["subjects"]["w"]
    assert w["count"] == 1 and w["stalls"] == 0
    assert w["longest"] == pytest.approx(2.4964 - 0.001, abs=1e-6)


def test_a_hang_longer_than_the_threshold_after_another_clients_success_is_a_stall() -> None:
    ops = [*op(1, "write", 0.0, 0.001, workload="w", endpoint="r", key=1),
           *op(2, "write", 0.0005, 0.5, workload="w", endpoint="r", key=2)]
    w = run(history(ops), ctx(0, 1)).metrics["subjects"]["w"]
    assert w["count"] == 1 and w["stalls"] == 1
    assert w["longest"] == pytest.approx(0.499, abs=1e-6)


def test_error_windows_and_stalls_add_up_to_the_count() -> None:
    """A writer out from the kill to the promote (failures), then a write that hung 0.26 s
    and succeeded (a stall, as a busy disk gives): two windows, one of each. An expectation
    that the router moved once reads `error_windows`, which the stall does not change."""
    def probes(down: list[tuple[int, int]], hang: int | None = None
               ) -> list[tuple[float, float, str]]:
        out: list[tuple[float, float, str]] = []
        for i in range(1000):  # every 10 ms for 10 s
            if hang is not None and hang <= i < hang + 27:
                if i == hang:
                    out.append((i / 100, i / 100 + 0.26, "ok"))
                continue
            bad = any(a <= i < b for a, b in down)
            out.append((i / 100, i / 100 + 0.001, "fail" if bad else "ok"))
        return out

    m = run(history(probe(probes([(500, 600)], hang=800))), ctx(0, 10)).metrics
    for w in (m, m["subjects"]["w"]):
        assert (w["count"], w["error_windows"], w["stalls"]) == (2, 1, 1)
    # two failure windows (the writer moved back and forth) are two error windows
    w = run(history(probe(probes([(300, 400), (600, 700)]))), ctx(0, 10)).metrics["subjects"]["w"]
    assert (w["count"], w["error_windows"], w["stalls"]) == (2, 2, 0)
