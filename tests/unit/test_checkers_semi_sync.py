"""semi_sync: a primary's semi-sync fallbacks, how long it stayed asynchronous, and the commits
that went on without a replica's acknowledgement, from the replication watcher's samples."""

from __future__ import annotations

from typing import Any

import pytest
from histories import ctx, ns

from lab.history import Sample
from lab.judge.checkers.semi_sync import check
from runners.replication_watch import ReplicationWatcher


def ss(t: float, node: str = "db1", *, on: bool = True, no: int = 0, yes: int = 0,
       enabled: bool = True) -> Sample:
    return Sample("replication", node, ns(t), {
        "configured": 0.0, "io_running": 0.0, "sql_running": 0.0,
        "semi_sync_enabled": 1.0 if enabled else 0.0, "semi_sync_on": 1.0 if on else 0.0,
        "semi_sync_no_tx": float(no), "semi_sync_yes_tx": float(yes)})


def test_one_fallback_its_time_and_the_commits_without_acknowledgement() -> None:
    samples = [ss(0.0, yes=1000, no=7), ss(0.2, yes=1014, no=7), ss(0.4, on=False, yes=1014,
               no=8), ss(0.6, on=False, yes=1014, no=22), ss(2.4, on=False, yes=1014, no=148),
               ss(2.6, yes=1020, no=150), ss(2.8, yes=1034, no=150)]
    r = check([], ctx(0, 3, samples=samples))
    db1 = r.metrics["subjects"]["db1"]  # type: ignore[index]
    assert (db1["fallbacks"], db1["unseen_fallbacks"], db1["still_off"]) == (1, 0, False)
    assert db1["off"] == pytest.approx(2.2)  # first OFF sample (0.4 s) to first ON (2.6 s)
    assert (db1["unacknowledged"], db1["acknowledged"]) == (143.0, 34.0)  # deltas only
    assert db1["windows"] == [{"at": 0.4, "after": 0.2, "back": 2.6, "seen": True}]
    assert db1["lower_bound"] is False and r.metrics["fallbacks"] == 1


def test_a_fall_between_two_samples_is_seen_by_the_counter() -> None:
    """Both samples read ON, yet commits went without acknowledgement in between: semi-sync
    fell and recovered within the interval; it counts, with no time."""
    r = check([], ctx(0, 1, samples=[ss(0.0, no=3), ss(0.2, no=3), ss(0.4, no=9)]))
    db1 = r.metrics["subjects"]["db1"]  # type: ignore[index]
    assert (db1["fallbacks"], db1["unseen_fallbacks"], db1["off"]) == (1, 1, 0)
    assert db1["unacknowledged"] == 6.0


def test_a_restart_makes_the_counts_a_lower_bound_and_a_window_left_open_is_said() -> None:
    unread = Sample("replication", "db1", ns(0.6), {"unreadable": 1.0})
    samples = [ss(0.0, yes=500, no=0), ss(0.4, yes=520, no=0), unread,
               ss(1.0, on=False, yes=3, no=4), ss(1.2, on=False, yes=3, no=30)]
    r = check([], ctx(0, 2, samples=samples))
    db1 = r.metrics["subjects"]["db1"]  # type: ignore[index]
    assert db1["restarted"] == 1 and db1["lower_bound"] is True
    assert (db1["unacknowledged"], db1["acknowledged"]) == (30.0, 23.0)  # 4 + 26; 20 + 3
    assert db1["still_off"] is True and db1["off"] == pytest.approx(0.2)
    assert db1["unreadable"] == 1


def test_a_node_without_the_primary_side_has_no_figures_and_no_samples_says_so() -> None:
    r = check([], ctx(0, 1, samples=[ss(0.0, "db2", on=False, enabled=False),
                                     ss(0.2, "db2", on=False, enabled=False)]))
    assert r.metrics["subjects"]["db2"] == {"enabled": False, "samples": 2,  # type: ignore[index]
                                            "unreadable": 0}
    assert r.metrics["nodes"] == []
    none = check([], ctx(0, 1, samples=[]))
    assert none.valid is True and none.metrics["subjects"] == {}
    assert "semi_sync off" in none.details


def test_the_expectation_on_a_node_that_never_waits_is_unknown_with_the_reason() -> None:
    from dsl.api import plan_text
    from lab.judge.expectations import evaluate

    plan = plan_text("""experiment "t" {
  duration 5s
  topology replication { primary db1  replicas db2  semi_sync on }
  workload w: unique_writes { target db1 }
  expect semi_sync(db2).unacknowledged == 0
  expect semi_sync(db1) == 0
}
""")
    c = ctx(0, 1, samples=[ss(0.0, "db2", on=False, enabled=False), ss(0.0, no=2),
                           ss(0.2, no=2)])
    results = {"semi_sync": check([], c)}
    db2, db1 = (evaluate(e, results, c) for e in plan.expectations)
    assert db2.passed is None and "not enabled on 'db2'" in db2.explanation
    assert db1.passed is True and db1.metric == "semi_sync(db1).unacknowledged"


class _Cursor:
    def __init__(self, answers: list[list[tuple[str, str]]]) -> None:
        self.answers = answers
        self.rows: list[tuple[str, str]] = []

    def execute(self, sql: str) -> None:
        self.rows = self.answers.pop(0)

    def fetchall(self) -> list[tuple[str, str]]:
        return self.rows

    def close(self) -> None:
        pass


class _Conn:
    def __init__(self, answers: list[list[tuple[str, str]]]) -> None:
        self.answers = answers

    def cursor(self, *_a: Any) -> _Cursor:
        return _Cursor(self.answers)


def test_the_watcher_reads_mariadbs_and_mysqls_names() -> None:
    maria = _Conn([[("rpl_semi_sync_master_enabled", "ON")],
                   [("Rpl_semi_sync_master_status", "OFF"), ("Rpl_semi_sync_master_no_tx", "12"),
                    ("Rpl_semi_sync_master_yes_tx", "340")]])
    assert ReplicationWatcher._semi_sync(maria) == {
        "semi_sync_enabled": 1.0, "semi_sync_on": 0.0, "semi_sync_no_tx": 12.0,
        "semi_sync_yes_tx": 340.0}
    mysql = _Conn([[("rpl_semi_sync_source_enabled", "OFF")],
                   [("Rpl_semi_sync_source_status", "OFF"), ("Rpl_semi_sync_source_no_tx", "0"),
                    ("Rpl_semi_sync_source_yes_tx", "0")]])
    assert ReplicationWatcher._semi_sync(mysql)["semi_sync_enabled"] == 0.0
    assert ReplicationWatcher._semi_sync(_Conn([[], []])) == {}  # no semi-sync on the server


def test_asynchronous_from_the_first_sample_is_a_fallback_and_off_a_bound() -> None:
    """A primary whose semi-sync never held in the load (its replica stopped before it) read
    fallbacks 0, off 0: expectations of a healthy semi-sync passed (the reviewer's case)."""
    r = check([], ctx(0, 1, samples=[ss(0.0, on=False, no=5), ss(0.2, on=False, no=9),
                                     ss(0.4, on=False, no=12)]))
    db1 = r.metrics["subjects"]["db1"]  # type: ignore[index]
    assert (db1["fallbacks"], db1["off_from_start"], db1["still_off"]) == (1, True, True)
    assert db1["off_lower_bound"] is True and db1["off"] == pytest.approx(0.4)


def test_a_node_not_read_for_a_while_gives_counts_that_are_bounds() -> None:
    unread = Sample("replication", "db1", ns(0.4), {"unreadable": 1.0})
    r = check([], ctx(0, 1, samples=[ss(0.0, no=1), ss(0.2, no=1), unread]))
    db1 = r.metrics["subjects"]["db1"]  # type: ignore[index]
    assert db1["restarted"] == 0 and db1["unread_gaps"] is True and db1["lower_bound"] is True
