from __future__ import annotations

import math

import pytest
from histories import ctx, fault, history, ns, probe

from lab.history import NEMESIS, Op, Sample
from lab.judge.checkers import replication_lag, warmup
from lab.judge.checkers.replication_lag import downsample


def lag(node: str, t: float, v: float) -> Sample:
    return Sample("lag", node, ns(t), {"lag": v})


def test_lag_per_replica() -> None:
    samples = [lag("db2", i / 10, i / 100) for i in range(101)]
    samples += [lag("db3", i / 10, 0.0) for i in range(50)]
    samples += [Sample("lag", "db3", ns(6), {"lag": math.nan}), Sample("other", "db3", 0, {})]
    r = replication_lag.check([], ctx(0, 10, samples=samples))
    s = r.metrics["subjects"]
    assert s["db2"]["max"] == pytest.approx(1.0)
    assert s["db2"]["p50"] == pytest.approx(0.5)
    assert s["db2"]["p99"] == pytest.approx(0.99)
    assert s["db3"]["max"] == 0.0
    assert s["db3"]["unreadable"] == 1
    assert r.metrics["max"] == pytest.approx(1.0)
    assert s["db2"]["series"][0] == [0.0, 0.0]


def test_a_replica_that_answered_without_a_heartbeat_is_not_unreadable() -> None:
    """r1's replication was stopped before the load: it answered every sample, but the
    heartbeat never reached it. It was counted unreadable ("never read") though it was up."""
    from runners.replication import NO_HEARTBEAT
    samples = [Sample("lag", "r1", ns(i / 10), dict(NO_HEARTBEAT)) for i in range(20)]
    s = replication_lag.check([], ctx(0, 2, samples=samples)).metrics["subjects"]["r1"]
    assert (s["no_heartbeat"], s["unreadable"], s["max"]) == (20, 0, None)


def test_lag_without_samples() -> None:
    r = replication_lag.check([], ctx(0, 10))
    assert r.metrics["subjects"] == {} and r.metrics["max"] is None


def test_downsample_keeps_peaks_and_bounds_points() -> None:
    pts = [(i / 100, 0.0) for i in range(10_000)]
    pts[5_000] = (50.0, 9.0)
    out = downsample(pts, 300)
    assert len(out) <= 300
    assert max(v for _, v in out) == 9.0


def throughput_with_dip(levels: list[int], w: str = "w") -> list:  # type: ignore[type-arg]
    ops = []
    for s, n in enumerate(levels):
        ops += [(s + i / max(n, 1), s + i / max(n, 1) + 0.001, "ok") for i in range(n)]
    return probe(ops, workload=w)


def test_warmup_after_drop_caches() -> None:
    levels = [100] * 10 + [20, 40, 60, 95, 100, 100, 100, 100, 100, 100]
    h = history(throughput_with_dip(levels), fault("drop_caches", 10.0, 10.0, "db1"))
    r = warmup.check(h, ctx(0, 20))
    s = r.metrics["subjects"]["w"]
    assert s["recovered"] is True
    assert s["warmup"] == pytest.approx(3.0)  # second 13 is the first back at >= 90 %
    assert s["min_level"] == pytest.approx(0.2)
    assert s["dip_beyond_noise"] is True


def test_an_earlier_outage_is_not_the_baseline_s_noise() -> None:
    """A kill at 3 s (down to 0 for 2 s), then a cache drop at 14 s with a dip to 50 %: the
    baseline of the drop leaves out the seconds of the kill, so the dip is beyond its noise
    (with them in, the noise went down to 0 and the dip could never be beyond it)."""
    levels = [100] * 3 + [0, 0] + [100] * 9 + [50, 100, 100, 100, 100, 100]
    refused = probe([(3.0 + i / 50, 3.0 + i / 50 + 0.001, "fail") for i in range(100)],
                    process=2)  # the writes while db1 was down
    h = history(throughput_with_dip(levels), refused, fault("kill", 3.0, 3.01, "db1"),
                fault("start", 4.99, 5.0, "db1"), fault("drop_caches", 14.0, 14.0, "db1"))
    s = warmup.check(h, ctx(0, len(levels))).metrics["subjects"]["w"]
    assert s["faults"][0]["noise"]["min"] == 100
    assert s["dip_beyond_noise"] is True and s["min_level"] == pytest.approx(0.5)


def test_warmup_no_dip_beyond_noise() -> None:
    levels = [100, 90, 110, 95, 105, 100, 92, 108, 100, 100] + [93, 101, 99, 100] * 2
    h = history(throughput_with_dip(levels), fault("drop_caches", 10.0, 10.0))
    s = warmup.check(h, ctx(0, len(levels))).metrics["subjects"]["w"]
    assert s["dip_beyond_noise"] is False
    assert s["warmup"] == 0.0
    assert s["faults"][0]["note"] == "no dip beyond noise"


def test_warmup_not_recovered_is_a_lower_bound() -> None:
    levels = [100] * 10 + [10] * 5
    h = history(throughput_with_dip(levels), fault("drop_caches", 10.0, 10.0))
    s = warmup.check(h, ctx(0, 15)).metrics["subjects"]["w"]
    assert s["recovered"] is False and s["warmup"] is None
    assert s["lower_bound"] == pytest.approx(5.0, abs=0.01)


def test_warmup_needs_a_baseline() -> None:
    h = history(throughput_with_dip([100] * 5), fault("drop_caches", 1.0, 1.0))
    s = warmup.check(h, ctx(0, 5)).metrics["subjects"]["w"]
    assert s["warmup"] is None and "whole seconds" in s["unknown"]


def test_warmup_without_fault_is_measured_from_the_start() -> None:
    levels = [10, 30, 60, 95, 100, 100, 100, 100, 100, 100]
    r = warmup.check(history(throughput_with_dip(levels)), ctx(0, 10))
    assert r.metrics["faults"] == 0 and r.metrics["mode"] == "start"
    s = r.metrics["subjects"]["w"]
    assert s["warmup"] == pytest.approx(3.0)
    assert s["baseline"] == pytest.approx(100.0)
    assert s["min_level"] == pytest.approx(0.1)


def test_warmup_from_start_needs_enough_seconds() -> None:
    r = warmup.check(history(throughput_with_dip([10] * 3)), ctx(0, 3))
    assert r.metrics["subjects"]["w"]["warmup"] is None


def test_warmup_fault_from_facts_and_custom_baseline() -> None:
    levels = [100] * 5 + [50, 100, 100, 100]
    facts = {"warmup": {"baseline": 4, "faults": [{"name": "drop_caches", "start": ns(5.0)}]}}
    s = warmup.check(history(throughput_with_dip(levels)), ctx(0, 9, facts=facts))
    subj = s.metrics["subjects"]["w"]
    assert subj["warmup"] == pytest.approx(1.0)
    assert subj["faults"][0]["baseline"] == pytest.approx(100)


def test_the_second_a_drop_overlaps_counts_in_its_dip() -> None:
    """The only second below the noise (76 % of the level) began 77 ms before the drop
    ended: it was left out, and the report said "no dip beyond noise"."""
    levels = [100, 98, 102, 100, 99, 101, 100, 100, 99, 101] + [76] + [100] * 9
    h = history(throughput_with_dip(levels), fault("drop_caches", 9.5, 10.077))
    s = warmup.check(h, ctx(0, len(levels))).metrics["subjects"]["w"]
    assert s["dip_beyond_noise"] is True
    assert s["min_level"] == pytest.approx(0.76, abs=0.01)
    assert s["recovered"] is True and s["warmup"] == pytest.approx(0.923, abs=0.001)


def test_a_drop_that_did_not_complete_computes_nothing() -> None:
    """`finished: false`: the kernel had not dropped the cache within the 2 s limit; a
    warm-up of 0.98 s was computed from it. Its action failed: nothing is computed."""
    levels = [100] * 10 + [60, 95, 100, 100, 100, 100, 100, 100, 100, 100]
    drop = [Op("invoke", "drop_caches", NEMESIS, ns(10.0)),
            Op("fail", "drop_caches", NEMESIS, ns(12.0), value={"finished": False},
               error_msg="the drop did not complete")]
    r = warmup.check(history(throughput_with_dip(levels), drop), ctx(0, len(levels)))
    s = r.metrics["subjects"]["w"]
    assert s["warmup"] is None and s["recovered"] is None
    assert "did not complete" in s["unknown"] and r.metrics["failed_faults"] == 1
    assert r.metrics["mode"] == "fault"  # not a warm-up "from the start" either
