"""The numbers behind the HTML report (lab.report.data), exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from report_fixture import build_run

from lab.history import NEMESIS, Op, Sample, pair_ops
from lab.report.data import (
    FaultPeriod,
    errors_per_second,
    failover_phases,
    fault_periods,
    guess_kinds,
    lag_series,
    latency_per_second,
    load_report,
    outages,
    thin,
    throughput_points,
    visibility,
)
from lab.store.db import Store
from lab.store.errors import AmbiguousRun, RunNotFound

S = 1_000_000_000
T0 = 50 * S


def t(sec: float) -> int:
    return T0 + round(sec * S)


def ops(*specs: tuple[Any, ...]) -> list[Op]:
    """(process, f, invoke s, completion s or None, type, extra fields)"""
    out: list[Op] = []
    for p, f, a, b, ty, kw in specs:
        out.append(Op("invoke", f, p, t(a), workload=kw.get("workload", "w"),
                      endpoint=kw.get("endpoint", "db1"), key=kw.get("key"),
                      value=kw.get("value") if f != "read" else None))  # fmt: skip
        if b is not None:
            out.append(Op(ty, f, p, t(b), workload=kw.get("workload", "w"),
                          endpoint=kw.get("endpoint", "db1"), node=kw.get("node"),
                          key=kw.get("key"), value=kw.get("value"),
                          error=kw.get("error")))  # fmt: skip
    out.sort(key=lambda o: o.time)
    return [Op(o.type, o.f, o.process, o.time, o.workload, o.endpoint, o.node, o.key, o.value,
               o.error, o.error_msg, i) for i, o in enumerate(out)]  # fmt: skip


def nemesis(name: str, node: str | None, a: float, b: float | None,
            ty: str = "ok") -> list[Op]:  # fmt: skip
    out = [Op("invoke", name, NEMESIS, t(a), node=node)]
    if b is not None:
        out.append(Op(ty, name, NEMESIS, t(b), node=node))  # type: ignore[arg-type]
    return out


def store_run(tmp_path: Path, history: list[Op], samples: list[Sample] | None = None,
              load: tuple[float, float] = (0.0, 3.0),
              kinds: dict[str, str] | None = None) -> tuple[Store, str]:  # fmt: skip
    store = Store(tmp_path / "r.db")
    rid = store.create_run("x", "x.exp")
    store.create_cell(rid, 1, "base")
    store.insert_operations(rid, 1, history)
    store.insert_samples(rid, 1, samples or [])
    store.finish_cell(rid, 1, "passed", load_start_ns=t(load[0]), load_end_ns=t(load[1]))
    cell = {"index": 1, "label": "base", "status": "passed", "expectations": [],
            "measurements": {}}  # fmt: skip
    if kinds is not None:
        cell["workloads"] = kinds
    store.finish_run(rid, "passed", 0, summary={"run_id": rid, "experiment": "x",
                                                 "cells": [cell]})  # fmt: skip
    return store, rid


# --- throughput, latency, errors ------------------------------------------------------------


def test_three_ops_completed_in_second_one_are_three_per_second(tmp_path: Path) -> None:
    h = ops((1, "write", 0.2, 0.3, "ok", {}),
            (1, "write", 1.0, 1.1, "ok", {}), (1, "write", 1.2, 1.4, "ok", {}),
            (1, "write", 1.5, 1.99, "ok", {}),
            (1, "write", 2.0, 2.5, "fail", {"error": 2013}))  # fmt: skip
    store, rid = store_run(tmp_path, h, kinds={"w": "probe"})
    (cell,) = load_report(store, rid).cells
    assert cell.throughput == {"w": [1.0, 3.0, 0.0]}
    assert cell.throughput_source == {"w": "ops"}
    assert cell.load_seconds == 3.0
    assert cell.errors == {"w": {"2013": [0, 0, 1]}}


def test_read_your_writes_counts_its_writes_not_its_reads_and_polls(tmp_path: Path) -> None:
    h = ops((1, "write", 0.1, 0.2, "ok", {"key": 1, "value": 1}),
            (2, "read", 0.3, 0.4, "ok", {"key": 1, "value": 1, "node": "db2"}),
            (2, "poll", 0.5, 0.6, "ok", {"value": [[1, 1]], "node": "db2"}))  # fmt: skip
    store, rid = store_run(tmp_path, h, kinds={"w": "read_your_writes"})
    assert load_report(store, rid).cells[0].throughput["w"][0] == 1.0
    # without the kinds in the summary, a workload that polls is taken for read_your_writes
    assert guess_kinds(h) == {"w": "read_your_writes"}
    (tmp_path / "x").mkdir()
    store2, rid2 = store_run(tmp_path / "x", h, kinds=None)
    assert load_report(store2, rid2).cells[0].throughput["w"][0] == 1.0


def test_latency_percentiles_per_second() -> None:
    # second 0: 100 ops taking 1..100 ms; second 2: one op of 7 ms; second 1: nothing ok
    specs = [(100 + i, "write", i / 1000, (2 * i + 1) / 1000, "ok", {}) for i in range(100)]
    specs += [(1, "write", 1.5, 1.6, "fail", {"error": 2013}),
              (1, "write", 2.0, 2.007, "ok", {})]  # fmt: skip
    h = ops(*specs)
    lat = latency_per_second(pair_ops(h).ops, t(0), t(3))
    s = lat["w"]
    assert s.seconds == [0, 2]
    assert s.count == [100, 1]
    assert s.p50[0] == pytest.approx(0.050) and s.p95[0] == pytest.approx(0.095)
    assert s.p99[0] == pytest.approx(0.099)
    assert s.p50[1] == s.p99[1] == pytest.approx(0.007)


def test_errors_by_code_per_second() -> None:
    h = ops((1, "write", 0.1, 0.2, "info", {}),  # a timeout: no code
            (2, "write", 0.3, 1.2, "fail", {"error": 2003}),
            (3, "write", 1.3, 1.4, "fail", {"error": 2003}),
            (4, "write", 2.5, None, "info", {}),  # never completed: at its invoke
            (5, "write", 0.1, 0.2, "ok", {}))  # fmt: skip
    assert errors_per_second(pair_ops(h).ops, t(0), t(3)) == {
        "w": {"2003": [0, 2, 0], "incomplete": [0, 0, 1], "timeout": [1, 0, 0]}
    }


# --- fault periods ----------------------------------------------------------------------------


def test_fault_periods_from_the_fault_to_the_action_that_ends_it() -> None:
    h = [*nemesis("kill", "db1", 2.0, 2.01), *nemesis("wait_down", "db1", 2.1, 2.2),
         *nemesis("promote", "db2", 3.0, 3.2), *nemesis("start", "db1", 5.5, 6.0),
         *nemesis("partition", "db3", 6.0, 6.01), *nemesis("heal", None, 7.0, 7.5),
         *nemesis("pause", "db2", 8.0, 8.001)]  # fmt: skip
    h.sort(key=lambda o: o.time)
    assert fault_periods(h, t(0), t(10)) == [
        FaultPeriod("kill db1 until start db1", "kill", "db1", 2.0, 6.0),
        FaultPeriod("promote db2", "promote", "db2", 3.0, 3.2),
        FaultPeriod("network partition db3 until network heal", "partition", "db3", 6.0, 7.5),
        FaultPeriod("pause db2", "pause", "db2", 8.0, 10.0, open_at_end=True),
    ]


def test_fault_periods_clipped_to_the_load_and_failed_actions() -> None:
    h = [*nemesis("kill", "db1", 1.0, 1.1, "fail"), *nemesis("stop", "db2", 2.0, 2.5),
         *nemesis("start", "db2", 12.0, 13.0), *nemesis("drop_caches", None, 4.0, 4.25),
         *nemesis("kill", "db3", 11.0, 11.1)]  # fmt: skip
    h.sort(key=lambda o: o.time)
    assert fault_periods(h, t(0), t(10)) == [
        FaultPeriod("kill db1", "kill", "db1", 1.0, 1.1, ok=False),  # it did not happen
        FaultPeriod("stop db2 until start db2", "stop", "db2", 2.0, 10.0, open_at_end=True),
        FaultPeriod("drop caches", "drop_caches", None, 4.0, 4.25),
    ]


# --- lag, visibility, outages, failovers -----------------------------------------------------


def test_lag_per_replica_with_unreadable_samples() -> None:
    samples = [Sample("lag", "db2", t(0.5), {"lag": 0.25}), Sample("lag", "db2", t(1.0), {}),
               Sample("lag", "db3", t(0.5), {"lag": float("nan")}),
               Sample("sysbench", "sb", t(1.0), {"tps": 5.0})]  # fmt: skip
    assert lag_series(samples, t(0)) == {"db2": [(0.5, 0.25), (1.0, None)], "db3": [(0.5, None)]}


def test_thin_keeps_the_peaks() -> None:
    pts: list[tuple[float, float | None]] = [(i / 10, float(i % 7)) for i in range(100)]
    out = thin(pts, 10)
    assert len(out) == 10 and all(v == 6.0 for _, v in out)
    assert thin(pts[:5], 10) == pts[:5]


def test_visibility_of_each_write_on_each_node() -> None:
    w = {"workload": "ryw", "endpoint": "router.writer"}
    h = ops((1, "write", 0.0, 0.01, "ok", {**w, "key": 1, "value": 1}),
            (2, "read", 0.011, 0.014, "ok", {"workload": "ryw", "key": 1, "value": 1,
                                              "node": "db2", "endpoint": "db2"}),
            (3, "read", 0.011, 0.013, "ok", {"workload": "ryw", "key": 1, "value": None,
                                              "node": "db3", "endpoint": "db3"}),
            (3, "poll", 0.02, 0.05, "ok", {"workload": "ryw", "value": [[1, 1]],
                                            "node": "db3", "endpoint": "db3"}),
            (1, "write", 1.0, 1.01, "ok", {**w, "key": 2, "value": 2}),
            (3, "read", 1.011, 1.02, "ok", {"workload": "ryw", "key": 2, "value": None,
                                             "node": "db3", "endpoint": "db3"}))  # fmt: skip
    vis = {v.subject: v for v in visibility(h)}
    assert set(vis) == {"ryw on db2", "ryw on db3"}
    assert vis["ryw on db2"].times == [pytest.approx(0.004)]
    assert vis["ryw on db3"].times == [pytest.approx(0.04)]  # the poll saw it 40 ms after
    assert vis["ryw on db3"].unseen == [pytest.approx(0.01)]  # key 2: never seen, >= 10 ms
    assert vis["ryw on db3"].resolution == pytest.approx(0.037)  # poll end - the read before


def test_outages_are_the_downtime_checkers_windows_per_workload() -> None:
    win = {"start": 1.0, "end": 2.5, "duration": 1.5, "kind": "error", "open_at_end": False,
           "errors": {"2013": 3}}  # fmt: skip
    got = outages({"subjects": {"w": {"windows": [win]}, "w on db1": {"windows": [win]},
                                "q": {"windows": []}}})  # fmt: skip
    assert list(got) == ["w", "q"] and got["q"] == []
    (o,) = got["w"]
    assert (o.start, o.end, o.duration, o.kind, o.errors) == (1.0, 2.5, 1.5, "error", {"2013": 3})
    assert outages(None) == {}


def test_failover_phases_between_what_the_clients_saw() -> None:
    f = {"old_primary": "db1", "new_primary": "db2", "fault": "kill", "fault_node": "db1",
         "fault_at": 4.0, "first_failure_at": 4.01, "new_writer_accepts_at": 5.5,
         "router_switch_at": 5.5, "recovered_at": 5.6, "open_at_end": False,
         "lab_promote_started": 0.5, "lab_promote_call_seconds": 0.3,
         "endpoints": {"router.writer": {"worked_before": True, "last_ok_at": 3.99,
                                         "recovered_at": 5.6, "open_at_end": False}}}  # fmt: skip
    (fo,) = failover_phases({"failovers": [f]}, 10.0)
    assert fo.title == "db1 → db2" and fo.fault_at == 4.0
    got = [(p.row, p.name, p.start, p.end) for p in fo.phases]
    assert got == [
        ("phases", "kill db1 → first write failed", 4.0, 4.01),
        ("phases", "first write failed → new primary accepted a write, router switched", 4.01,
         5.5),
        ("phases", "new primary accepted a write, router switched → every writer recovered",
         5.5, 5.6),
        ("router.writer outage", "router.writer: no ok write", 3.99, 5.6),
        ("lab's promote call", "the lab's promote call", 4.5, 4.8),
    ]  # fmt: skip


def test_a_failover_never_recovered_runs_to_the_end_of_the_load() -> None:
    f = {"old_primary": "db1", "new_primary": "db2", "fault": "kill", "fault_node": "db1",
         "fault_at": 4.0, "first_failure_at": 4.2, "new_writer_accepts_at": None,
         "recovered_at": None, "open_at_end": True,
         "endpoints": {"db1": {"worked_before": True, "last_ok_at": 3.9, "recovered_at": None,
                               "open_at_end": True}}}  # fmt: skip
    (fo,) = failover_phases({"failovers": [f]}, 9.0)
    got = [(p.name, p.start, p.end, p.open_at_end) for p in fo.phases]
    assert got == [
        ("kill db1 → first write failed", 4.0, 4.2, False),
        ("first write failed → not recovered by the end of the load", 4.2, 9.0, True),
        ("db1: no ok write until the end", 3.9, 9.0, True),
    ]
    assert failover_phases(None, 9.0) == [] and failover_phases({"count": 0}, 9.0) == []


# --- a whole stored run -----------------------------------------------------------------------


def test_the_synthetic_failover_run_read_back(tmp_path: Path) -> None:
    rid = build_run(tmp_path / "r.db")
    with Store(tmp_path / "r.db") as store:
        report = load_report(store, rid[:5])
    assert report.run_id == rid and report.experiment == "synthetic-failover"
    a, b = report.cells
    assert (a.label, b.label) == ("a", "b")
    assert a.load_seconds == 10.0
    # 10 probe writes per second, none in second 4 (db1 killed at 4 s), half of second 5 in a
    assert a.throughput["writes"][:6] == [10.0, 10.0, 10.0, 10.0, 0.0, 5.0]
    assert b.throughput["writes"][4:7] == [0.0, 0.0, 5.0]
    assert [(f.label, f.start, f.end) for f in a.faults] == [
        ("kill db1 until start db1", 4.0, 8.6), ("promote db2", 4.5, 4.8)]
    assert a.errors["writes"]["2013"][4] == 3 and a.errors["writes"]["2003"][4:6] == [7, 5]
    (wo,) = a.outages["writes"]
    assert (wo.start, wo.end) == (pytest.approx(3.905), pytest.approx(5.505))
    (vis,) = a.visibility
    assert vis.subject == "ryw on db3" and sorted(set(vis.times)) == [
        pytest.approx(0.004), pytest.approx(0.03)]
    assert a.lag["db3"][9] == (4.5, None) and a.lag["db3"][8] == (4.0, 1.5)
    (fa,), (fb,) = a.failovers, b.failovers
    assert fa.events["every writer recovered"] == pytest.approx(5.504)
    assert fb.events["every writer recovered"] == pytest.approx(6.504)
    assert [e["passed"] for e in a.expectations] == [False, True, True]
    assert a.reports[0]["text"] == "report throughput(writes)"


def test_an_unknown_or_ambiguous_run(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    store.create_run("x", run_id="abc111111111")
    store.create_run("x", run_id="abc222222222")
    with pytest.raises(RunNotFound):
        load_report(store, "fff")
    with pytest.raises(AmbiguousRun):
        load_report(store, "abc")


def test_a_node_is_up_again_when_its_start_says_it_was_ready() -> None:
    h = [*nemesis("kill", "db1", 2.0, 2.01), *nemesis("start", "db1", 5.0, 9.0)]
    h[-1] = Op("ok", "start", NEMESIS, t(9.0), node="db1",
               value={"ready_seconds": 1.25, "rejoined_as_replica_of": "db2"})
    (p,) = fault_periods(h, t(0), t(10))
    assert (p.start, p.end) == (2.0, 6.25)  # ready at 6.25 s; the rejoin took until 9 s


def test_a_stall_p99_hides_shows_as_the_seconds_max() -> None:
    """Second 0: 199 ops of 1 ms and one of 2 s completing in it: p99 is 1 ms, the max 2 s."""
    specs = [(100 + i, "write", 0.3 + i / 1000, 0.301 + i / 1000, "ok", {}) for i in range(199)]
    specs += [(1, "write", -1.5, 0.5, "ok", {})]  # invoked before the load, done in second 0
    s = latency_per_second(pair_ops(ops(*specs)).ops, t(-2), t(1))["w"]
    i = s.seconds.index(2)  # seconds since t(-2)
    assert s.p99[i] == pytest.approx(0.001)
    assert s.max[i] == pytest.approx(2.0)


def test_the_last_partial_second_is_a_rate_not_a_fall() -> None:
    """A 10.4 s load: the 11th bucket holds 0.4 s: 40 ops there are 100 per second."""
    xs, ys, hover = throughput_points([100.0] * 10 + [40.0], 10.4)
    assert ys == pytest.approx([100.0] * 11) and xs[-1] == pytest.approx(10.2)
    assert "40 ops in 0.40 s of second 10 (a partial second)" in hover[-1]
    xs, ys, _ = throughput_points([100.0] * 10 + [5.0], 10.05)  # 50 ms: no rate to give
    assert len(ys) == 10 and xs[-1] == 9.5
    assert throughput_points([100.0, 100.0], 2.0)[1] == [100.0, 100.0]  # whole seconds: as is


def test_a_workload_that_stops_before_the_load_ends_does_not_fall_to_zero() -> None:
    """A 30 s workload in a 31.3 s load (the timeline waited after it): the seconds after it
    stopped are not drawn as 0; one it started half-way through is a rate over its half."""
    counts = [50.0] + [100.0] * 29 + [1.0, 0.0]
    xs, ys, _ = throughput_points(counts, 30.003, 0.5)
    assert ys == pytest.approx([100.0] * 30) and xs[0] == pytest.approx(0.75)
    assert xs[-1] == 29.5
