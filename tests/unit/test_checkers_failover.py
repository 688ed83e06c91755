"""failover: phases measured from the clients' operations, not from the lab's timeline."""

from __future__ import annotations

from typing import Any

import pytest
from histories import ctx, fault, history, ns, op

from lab.history import NEMESIS, Op
from lab.judge.checkers import ALL_CHECKERS
from lab.judge.checkers.failover import check

PROMOTE_VALUE = {"old_primary": "db1", "new_primary": "db2", "promote_seconds": 0.02,
                 "repoint_seconds": 0.03, "router_switch_seconds": 0.01}  # fmt: skip


def promote(start: float, end: float, new: str = "db2", old: str = "db1") -> list[Op]:
    value = dict(PROMOTE_VALUE, old_primary=old, new_primary=new)
    return [Op("invoke", "promote", NEMESIS, ns(start), "nemesis", "", new),
            Op("ok", "promote", NEMESIS, ns(end), "nemesis", "", new, value=value)]  # fmt: skip


def writes(
    process: int,
    times: list[tuple[float, float, str, str | None]],
    *,
    workload: str = "w",
    endpoint: str = "router.writer",
    f: str = "write",
    error: int | None = 2003,
) -> list[Op]:
    """(invoke, completion, type, answering node) each; failures carry ``error``."""
    out: list[Op] = []
    for i, (t0, t1, ty, node) in enumerate(times):
        kw: dict[str, Any] = {"workload": workload, "endpoint": endpoint, "node": node,
                              "key": process * 10_000 + i, "value": 1}  # fmt: skip
        if ty != "ok" and error is not None:
            kw["error"] = error
        out += op(process, f, t0, t1, ty, **kw)  # type: ignore[arg-type]
    return out


def grid(start: float, end: float, step: float = 0.1) -> list[float]:
    n = round((end - start) / step)
    return [round(start + i * step, 6) for i in range(n)]


def failover_probe(
    *, kill_at: float = 10.0, back_at: float = 15.25, end: float = 30.0, back_node: str = "db2"
) -> list[tuple[float, float, str, str | None]]:
    """A write every 0.1 s (0.05 s each): ok on db1 before the kill, failing (0.01 s) until
    ``back_at``, then ok on ``back_node``."""
    out: list[tuple[float, float, str, str | None]] = []
    t = 0.0
    while t < end - 1e-9:
        if t < kill_at:
            out.append((t, t + 0.05, "ok", "db1"))
            t = round(t + 0.1, 6)
        elif t < back_at:
            out.append((t, t + 0.01, "fail", "db1"))
            t = round(t + 0.05, 6)
        else:
            out.append((t, t + 0.05, "ok", back_node))
            t = round(t + 0.1, 6)
    return out


def test_phases_come_from_the_operations_not_from_the_timeline() -> None:
    # kill at 10 s, the lab promotes 5 s later; the writes resume on db2 0.3 s after the
    # promote began: no phase is "5 s from the file"
    h = history(
        writes(1, failover_probe(back_at=15.25)),
        fault("kill", 10.0, 10.001, "db1"),
        promote(15.0, 15.1),
    )
    r = check(h, ctx(0, 30))
    m = r.metrics
    assert r.valid is True
    assert m["count"] == 1
    assert m["fault"] == "kill" and m["fault_node"] == "db1" and m["reference"] == "fault"
    assert m["fault_at"] == pytest.approx(10.0)
    assert m["last_ok_before"] == pytest.approx(-0.05)  # 9.95
    assert m["last_ok_before_at"] == pytest.approx(9.95)
    assert m["first_failure"] == pytest.approx(0.01)  # the clients saw it at once
    assert m["first_failure_error"] == "2003"
    assert m["new_writer_accepts"] == pytest.approx(5.3)
    assert m["new_writer_accepts_at"] == pytest.approx(15.3)
    assert m["router"] is True
    assert m["router_switch"] == pytest.approx(5.3)
    assert m["recovered"] == pytest.approx(5.3)
    assert m["outage"] == pytest.approx(15.3 - 9.95)
    assert m["open_at_end"] is False
    # the lab's own call is kept, labelled as such
    assert m["lab_promote_started"] == pytest.approx(5.0)
    assert m["lab_promote_call_seconds"] == pytest.approx(0.1)
    assert not any("detection" in k for k in m)
    ep = m["subjects"]["db2"]["endpoints"]["router.writer"]
    assert ep["failures"] > 0 and ep["outage"] == pytest.approx(5.35)
    assert m["subjects"]["db2"]["workloads"]["w"]["outage"] == pytest.approx(5.35)


def test_the_fault_is_the_last_disruption_of_the_old_primary_not_a_wait() -> None:
    h = history(
        writes(1, failover_probe(back_at=22.2)),
        fault("kill", 10.0, 10.001, "db1"),
        fault("wait_down", 11.0, 11.5, "db1"),
        fault("kill", 5.0, 5.001, "db3"),  # another node
        promote(22.0, 22.1),
    )
    m = check(h, ctx(0, 30)).metrics
    assert m["fault"] == "kill" and m["fault_at"] == pytest.approx(10.0)


def test_a_client_that_never_recovers() -> None:
    # the workload writes to db1 by name: after the promote db1 never takes writes again
    probe_ops = failover_probe(back_at=99.0)
    h = history(
        writes(1, probe_ops, endpoint="db1"),
        fault("kill", 10.0, 10.001, "db1"),
        promote(12.0, 12.1),
    )
    m = check(h, ctx(0, 30)).metrics
    assert m["recovered"] is None
    assert m["outage"] is None
    assert m["open_at_end"] is True
    assert m["outage_lower_bound"] == pytest.approx(30 - 9.95)
    assert m["recovered_lower_bound"] == pytest.approx(20.0)
    assert m["new_writer_accepts"] is None  # nobody wrote to db2: not observed, not a guess
    assert m["router"] is False and m["router_switch"] is None
    assert m["first_failure"] == pytest.approx(0.01)
    assert "never recovered" in check(h, ctx(0, 30)).details


def test_a_client_pinned_to_the_old_primary_is_not_the_failovers_figure() -> None:
    """`w` writes through the router (back on db2 at 15.25 s); `old` writes to db1 by name
    and is answered again when db1 is restarted, writable, at 25 s (split brain). The
    failover is `w`'s 5.3 s, not `old`'s 15 s; `old` keeps its own figure."""
    h = history(
        writes(1, failover_probe()),
        writes(2, failover_probe(back_at=25.0, back_node="db1"), workload="old",
               endpoint="db1"),
        fault("kill", 10.0, 10.001, "db1"),
        promote(12.0, 12.1),
    )
    m = check(h, ctx(0, 30)).metrics
    assert m["outage"] == pytest.approx(15.25 + 0.05 - 9.95)
    assert m["pinned_to_old_primary"] == ["db1"]
    f = m["failovers"][0]
    assert f["workloads"]["old"]["outage"] == pytest.approx(25.05 - 9.95)
    assert f["endpoints"]["db1"]["outage"] == pytest.approx(25.05 - 9.95)


def test_router_switch_is_seen_only_through_router_endpoints() -> None:
    # "direct" writes to db2 by name (refused while it is read only), "r" writes through the
    # router, which moves 2 s after the promote; "rd" reads through router.reader, which was
    # on db2 all along
    direct: list[tuple[float, float, str, str | None]] = []
    for t in grid(0, 30, 0.5):
        direct.append((t, t + 0.01, "ok" if t >= 12.5 else "fail", "db2"))
    routed = failover_probe(back_at=14.0)
    reads = [(t, t + 0.01, "ok", "db2") for t in grid(0, 30, 0.5)]
    h = history(
        writes(1, direct, workload="direct", endpoint="db2", error=1290),
        writes(2, routed, workload="r", endpoint="router.writer"),
        writes(3, reads, workload="rd", endpoint="router.reader", f="read"),
        fault("kill", 10.0, 10.001, "db1"),
        promote(12.0, 12.1),
    )
    m = check(h, ctx(0, 30)).metrics
    assert m["new_writer_accepts"] == pytest.approx(2.51)  # the direct write at 12.5
    assert m["router_switch"] == pytest.approx(4.05)  # router.writer answered by db2 at 14.05
    assert set(m["subjects"]["db2"]["routers"]) == {"router.writer"}  # reader left out
    # the direct endpoint never worked before the fault: not part of the outage
    eps = m["subjects"]["db2"]["endpoints"]
    assert eps["db2"]["worked_before"] is False and eps["db2"]["outage"] is None
    assert m["outage"] == pytest.approx(14.05 - 9.95)
    wl = m["subjects"]["db2"]["workloads"]
    assert wl["direct"]["endpoints_counted"] == 0 and wl["direct"]["outage"] is None
    assert wl["r"]["outage"] == pytest.approx(14.05 - 9.95)

    # the same without a router: no switch to see
    h2 = history(
        writes(1, direct, workload="direct", endpoint="db2", error=1290),
        writes(2, failover_probe(back_at=14.0), workload="x", endpoint="db1"),
        fault("kill", 10.0, 10.001, "db1"),
        promote(12.0, 12.1),
    )
    m2 = check(h2, ctx(0, 30)).metrics
    assert m2["router"] is False and m2["router_switch"] is None
    assert m2["new_writer_accepts"] == pytest.approx(2.51)


def test_an_ok_sent_by_the_dying_server_does_not_close_the_outage() -> None:
    a = [(9.8, 9.85, "ok", "db1"), (9.9, 9.95, "ok", "db1"), (10.0, 10.01, "fail", "db1"),
         (10.02, 10.03, "fail", "db1"), (12.0, 12.05, "ok", "db2")]  # fmt: skip
    b = [(9.7, 9.75, "ok", "db1"), (9.98, 10.02, "ok", "db1"), (10.05, 10.06, "fail", "db1"),
         (12.1, 12.15, "ok", "db2")]  # fmt: skip
    h = history(writes(1, a), writes(2, b), fault("kill", 10.0, 10.001, "db1"),
                promote(11.0, 11.1))  # fmt: skip
    m = check(h, ctx(0, 13)).metrics
    # client b's in-flight write acknowledged at 10.02 is after the first failure (10.01):
    # the outage runs from the last ok before that failure to the first ok of a later write
    assert m["first_failure"] == pytest.approx(0.01)
    assert m["recovered"] == pytest.approx(2.05)
    assert m["outage"] == pytest.approx(12.05 - 9.95)


def test_a_pause_with_an_operation_hanging_through_it() -> None:
    # a single client: its write hangs through the pause and is acknowledged after it
    a = [(t, t + 0.05, "ok", "db1") for t in grid(0, 10)] + [(10.0, 15.2, "ok", "db1")]
    a += [(t, t + 0.05, "ok", "db2") for t in grid(15.3, 20)]
    h = history(writes(1, a), fault("pause", 10.0, 10.001, "db1"), promote(14.0, 14.1))
    m = check(h, ctx(0, 20)).metrics
    assert m["first_failure"] is None  # nothing failed
    assert m["recovered"] == pytest.approx(5.2)
    assert m["outage"] == pytest.approx(15.2 - 9.95)
    assert m["new_writer_accepts"] == pytest.approx(5.35)


def test_a_planned_switchover_is_measured_from_the_promote() -> None:
    a = [(t, t + 0.05, "ok", "db1") for t in grid(0, 10)]
    a += [(t, t + 0.01, "fail", "db1") for t in grid(10, 10.4)]
    a += [(t, t + 0.05, "ok", "db2") for t in grid(10.4, 20)]
    h = history(writes(1, a), promote(10.0, 10.2))
    r = check(h, ctx(0, 20))
    m = r.metrics
    assert m["fault"] is None and m["reference"] == "promote"
    assert m["fault_at"] == pytest.approx(10.0)
    assert m["outage"] == pytest.approx(10.45 - 9.95)
    assert "no fault on the old primary" in r.details


def test_two_failovers_each_with_its_own_figures() -> None:
    a = [(t, t + 0.05, "ok", "db1") for t in grid(0, 10)]
    a += [(t, t + 0.01, "fail", "db1") for t in grid(10, 11)]
    a += [(t, t + 0.05, "ok", "db2") for t in grid(11, 20)]
    a += [(t, t + 0.01, "fail", "db2") for t in grid(20, 23)]
    a += [(t, t + 0.05, "ok", "db1") for t in grid(23, 30)]
    h = history(
        writes(1, a),
        fault("kill", 10.0, 10.001, "db1"),
        promote(10.5, 10.6),
        fault("stop", 20.0, 20.5, "db2"),
        promote(22.0, 22.1, new="db1", old="db2"),
    )
    m = check(h, ctx(0, 30)).metrics
    assert m["count"] == 2
    assert m["new_primary"] == "db2" and m["outage"] == pytest.approx(11.05 - 9.95)
    second = m["subjects"]["db1"]
    assert second["fault"] == "stop" and second["fault_at"] == pytest.approx(20.0)
    assert second["first_failure"] == pytest.approx(0.01)
    assert second["outage"] == pytest.approx(23.05 - 19.95)
    assert [f["new_primary"] for f in m["failovers"]] == ["db2", "db1"]


def test_inserts_count_and_duplicate_keys_are_answers() -> None:
    a = [(t, t + 0.05, "ok", "db1") for t in grid(0, 10)] + [(10.0, 10.01, "fail", "db1")]
    b = [(11.0, 11.01, "fail", "db2")]  # refused with 1062 by db2: an answer
    b += [(t, t + 0.05, "ok", "db2") for t in grid(12, 20)]
    h = history(writes(1, a, f="insert"), writes(2, b, f="insert", error=1062),
                fault("kill", 10.0, 10.001, "db1"), promote(10.5, 10.6))  # fmt: skip
    m = check(h, ctx(0, 20)).metrics
    assert m["first_failure"] == pytest.approx(0.01)
    assert m["recovered"] == pytest.approx(1.01)  # the server answered ...
    assert m["new_writer_accepts"] == pytest.approx(2.05)  # ... but accepted nothing yet


def test_no_promote_no_failover() -> None:
    h = history(writes(1, [(0.0, 0.1, "ok", "db1")]), fault("kill", 1.0, 1.1, "db1"))
    r = check(h, ctx(0, 5))
    assert r.valid is True
    assert r.metrics["count"] == 0 and r.metrics["subjects"] == {}


def test_registered() -> None:
    assert ALL_CHECKERS["failover"] is check


def test_the_failover_line_says_why_the_probe_saw_more_downtime() -> None:
    """After a writer kill the failover line said "writers' outage 37.8 ms" while the probe
    through the router measured 55.7 ms of downtime, and nothing said why: the failover ends
    at the first write accepted after the first failure; a failure after it reopens the
    probe's downtime. The line now shows both spans."""
    from histories import S, ctx, fault, history, op

    from lab.history import NEMESIS, Op
    from lab.judge.checkers import downtime, failover
    from lab.report.timeline import failover_lines

    kw: dict[str, Any] = {"workload": "probe", "endpoint": "router.writer"}
    ops = [*op(1, "write", 9.98, 9.99, node="db1", key=1, value=1, **kw),
           *op(1, "write", 9.995, 10.005, "fail", key=2, value=2, error=2013, **kw),
           *op(1, "write", 10.01, 10.0278, node="db2", key=3, value=3, **kw),
           *op(1, "write", 10.03, 10.035, "fail", key=4, value=4, error=2013, **kw),
           *op(1, "write", 10.04, 10.0835, node="db2", key=5, value=5, **kw),
           *op(1, "write", 10.1, 10.11, node="db2", key=6, value=6, **kw)]
    promote = [Op("invoke", "promote", NEMESIS, 10 * S + 6_000_000, node="db2"),
               Op("ok", "promote", NEMESIS, 10 * S + 9_000_000, node="db2",
                  value={"old_primary": "db1", "new_primary": "db2"})]
    h = history(ops, fault("kill", 10.0, 10.001, "db1"), promote)
    c = ctx(0, 11)
    cell = {"measurements": {"failover": failover.check(h, c).metrics,
                             "downtime": downtime.check(h, c).metrics}}
    assert cell["measurements"]["failover"]["outage"] == pytest.approx(0.0378)
    assert cell["measurements"]["downtime"]["subjects"]["probe"]["longest"] == \
        pytest.approx(0.0557)
    (line,) = failover_lines(cell)
    assert line.startswith("failover db1 → db2: writers' outage 37.8 ms; ")
    assert "downtime(probe) 55.7 ms (10.028 s → 10.084 s, 2 windows here) vs the failover's " \
        "9.990 s → 10.028 s: a window ends at any write's success and reopens at the next " \
        "failure; the failover's ends at the first write invoked after the first failure" \
        in line
