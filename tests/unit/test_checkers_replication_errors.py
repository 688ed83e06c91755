"""replication_errors: when each replication thread stopped, on which error, from samples."""

from __future__ import annotations

import math

import pytest
from histories import ctx, ns

from lab.history import Sample
from lab.judge.checkers import ALL_CHECKERS
from lab.judge.checkers.base import flatten_metrics
from lab.judge.checkers.replication_errors import check

MSG = "Could not execute Write_rows_v1 event on table lab.t_ins; Duplicate entry '7' for key"


def status(t: float, node: str, *, sql: bool = True, io: bool = True, sql_errno: int = 0,
           io_errno: int = 0, behind: float = 0.0) -> Sample:  # fmt: skip
    return Sample("replication", node, ns(t), {
        "configured": 1.0, "io_running": 1.0 if io else 0.0, "sql_running": 1.0 if sql else 0.0,
        "sql_errno": float(sql_errno), "io_errno": float(io_errno),
        "seconds_behind": behind if sql else math.nan,
    })  # fmt: skip


def ticks(start: float, end: float, step: float = 0.2) -> list[float]:
    return [round(start + i * step, 6) for i in range(round((end - start) / step))]


def test_both_primaries_stop_on_a_duplicate_key_at_different_moments() -> None:
    samples = []
    for t in ticks(0, 30):
        samples.append(status(t, "p1", sql=t < 7.0, sql_errno=1062 if t >= 7.0 else 0))
        samples.append(status(t, "p2", sql=t < 12.4, sql_errno=1062 if t >= 12.4 else 0))
    facts = {"replication_messages": {"p1": {"1062": MSG}, "p2": {"1062": MSG + " '9'"}}}
    r = check([], ctx(0, 30, samples=samples, facts=facts))
    assert r.valid is True
    m = r.metrics
    assert m["count"] == 2 and m["nodes"] == ["p1", "p2"] and m["stops"] == 2
    p1, p2 = m["subjects"]["p1"], m["subjects"]["p2"]
    assert p1["sql_stopped_at"] == pytest.approx(7.0)
    assert p1["sql_stopped_after"] == pytest.approx(6.8)  # the stop happened in between
    assert p2["sql_stopped_at"] == pytest.approx(12.4)
    assert p1["sql_errno"] == 1062 and p2["sql_errno"] == 1062
    assert p1["io_errno"] == 0 and p1["io_stopped_at"] is None
    assert p1["message"] == MSG and p2["sql_message"].endswith("'9'")
    assert p1["stopped"] is True and p1["stopped_on_error"] is True
    assert p1["count"] == 1 and p1["stopped_at"] == pytest.approx(7.0)
    assert p1["stops"] == [{"thread": "sql", "at": pytest.approx(7.0), "after": pytest.approx(6.8),
                            "errno": 1062, "errnos": [1062], "restarted_at": None,
                            "error": True}]  # fmt: skip
    assert "p1: SQL thread stopped at 7.0 s on error 1062" in r.details
    # storable: every figure flattens
    assert flatten_metrics("replication_errors", m)


def test_a_thread_stopped_by_the_lab_is_not_an_error() -> None:
    samples = []
    for t in ticks(0, 30):
        # p2: stop replication at 5 s, start at 20 s, then the SQL thread fails on 1062
        running = t < 5.0 or 20.0 <= t < 20.4
        err = 1062 if t >= 20.4 else 0
        samples.append(status(t, "p2", sql=running, io=t < 5.0 or t >= 20.0, sql_errno=err))
        # db3: stopped by the lab at 10 s, never started again
        samples.append(status(t, "db3", sql=t < 10.0, io=t < 10.0))
    m = check([], ctx(0, 30, samples=samples)).metrics
    db3 = m["subjects"]["db3"]
    assert db3["count"] == 0 and db3["sql_errno"] == 0 and db3["sql_stopped_at"] is None
    assert db3["stopped"] is True and db3["stopped_on_error"] is False
    assert [s["error"] for s in db3["stops"]] == [False, False]  # sql and io, errno 0
    p2 = m["subjects"]["p2"]
    assert p2["count"] == 1 and p2["sql_stopped_at"] == pytest.approx(20.4)
    assert p2["message"] is None  # no text was recorded
    assert m["count"] == 1 and m["nodes"] == ["p2"]


def test_an_error_appearing_during_a_stop_starts_a_stop_on_an_error() -> None:
    samples = [status(t, "db2", sql=t < 5.0, sql_errno=1146 if t >= 8.0 else 0)
               for t in ticks(0, 10)]  # fmt: skip
    db2 = check([], ctx(0, 10, samples=samples)).metrics["subjects"]["db2"]
    assert db2["count"] == 1 and db2["sql_stopped_at"] == pytest.approx(8.0)
    assert [(s["at"], s["errno"], s["restarted_at"]) for s in db2["stops"]] == [
        (pytest.approx(5.0), 0, pytest.approx(8.0)), (pytest.approx(8.0), 1146, None)]


def test_io_thread_losing_its_primary_unreadable_ticks_and_a_restart() -> None:
    samples = []
    for t in ticks(0, 20):
        if 6.0 <= t < 9.0:  # the node itself cannot be read: changes nothing
            samples.append(Sample("replication", "db2", ns(t), {"unreadable": 1.0}))
            continue
        down = 5.0 <= t < 12.0  # its primary is gone: IO thread Connecting, 2003
        samples.append(status(t, "db2", io=not down, io_errno=2003 if down else 0))
    db2 = check([], ctx(0, 20, samples=samples)).metrics["subjects"]["db2"]
    assert db2["io_stopped_at"] == pytest.approx(5.0) and db2["io_errno"] == 2003
    assert db2["unreadable"] == 15
    assert db2["count"] == 1 and db2["stopped"] is False
    assert db2["stops"][0]["restarted_at"] == pytest.approx(12.0)


def test_an_io_thread_reconnecting_to_a_restarting_primary_is_no_stop() -> None:
    """``Connecting`` (the watcher's ``io_connecting``): the thread retries by itself while its
    primary restarts, 5 s to 8 s: a reconnect, not a replication error; later it gives up
    (``No`` on 1236): a stop on an error from there, and ``stopped`` at the end."""
    samples = []
    for t in ticks(0, 20):
        s = status(t, "db2", io=not 5.0 <= t < 8.0 and t < 15.0,
                   io_errno=2003 if 5.0 <= t < 8.0 else 1236 if t >= 15.0 else 0)
        s.values["io_connecting"] = 1.0 if 5.0 <= t < 8.0 else 0.0
        samples.append(s)
    db2 = check([], ctx(0, 20, samples=samples)).metrics["subjects"]["db2"]
    assert db2["io_reconnects"] == 1 and db2["io_reconnect_errno"] == 2003
    assert db2["reconnects"][0]["at"] == pytest.approx(5.0)
    assert db2["reconnects"][0]["restarted_at"] == pytest.approx(8.0)
    assert db2["count"] == 1 and db2["io_errno"] == 1236  # only the stop on 1236
    assert db2["io_stopped_at"] == pytest.approx(15.0) and db2["stopped"] is True
    # still reconnecting at the end: not stopped, and said
    last = [status(t, "db3", io=t < 5.0, io_errno=2003 if t >= 5.0 else 0) for t in ticks(0, 8)]
    for s in last:
        s.values["io_connecting"] = 1.0 if s.values["io_running"] == 0.0 else 0.0
    db3 = check([], ctx(0, 8, samples=last)).metrics["subjects"]["db3"]
    assert db3["count"] == 0 and db3["stopped"] is False and db3["io_reconnecting"] is True
    from lab.report.summary_matrix import _replication_stops

    assert _replication_stops(db2) == "; IO stopped, error 1236; IO reconnected, error 2003"
    assert _replication_stops(db3) == "; IO reconnecting at the end, error 2003"


def test_already_stopped_at_the_first_sample_counts_without_a_time() -> None:
    samples = [status(t, "p1", sql=False, sql_errno=1062) for t in ticks(0, 2)]
    p1 = check([], ctx(0, 2, samples=samples)).metrics["subjects"]["p1"]
    assert p1["count"] == 1 and p1["sql_errno"] == 1062
    assert p1["sql_stopped_at"] is None and p1["stopped_at"] is None


def test_a_node_that_stops_replicating_at_a_promote() -> None:
    samples = [status(t, "db2") for t in ticks(0, 5)]
    samples += [Sample("replication", "db2", ns(t), {"configured": 0.0, "io_running": 0.0,
                "sql_running": 0.0, "sql_errno": 0.0, "io_errno": 0.0,
                "seconds_behind": math.nan}) for t in ticks(5, 10)]  # fmt: skip
    db2 = check([], ctx(0, 10, samples=samples)).metrics["subjects"]["db2"]
    assert db2["count"] == 0 and db2["stopped"] is False and db2["replicating"] is False
    assert db2["stops"] == []


def test_no_samples_is_unknown() -> None:
    r = check([], ctx(0, 10, samples=[Sample("lag", "db2", 0, {"lag": 0.1})]))
    assert r.valid is True  # nothing to judge (as replication_lag), but nothing is known:
    assert r.metrics["count"] is None and r.metrics["subjects"] == {}
    assert "no replication status samples" in r.details


def test_registered() -> None:
    assert ALL_CHECKERS["replication_errors"] is check
