"""Errant GTIDs: MariaDB positions per (domain, server id), the binlog's list, the checker."""

from __future__ import annotations

from typing import Any

from histories import ctx, history

from lab.judge.checkers.errant_gtids import check
from runners.errant_gtids import (
    errant,
    gtids_of_events,
    pairs_ahead,
    parse_state,
    read_errant,
    report,
)


def test_parse_state_keeps_every_server_of_a_domain() -> None:
    assert parse_state("0-100-5,0-200-7,\n99-100-3") == {(0, 100): 5, (0, 200): 7,
                                                         (99, 100): 3}
    assert parse_state("") == {}


def test_gtids_of_binlog_events() -> None:
    rows = [{"Event_type": "Gtid_list", "Info": "[0-100-4]"},
            {"Event_type": "Gtid", "Info": "BEGIN GTID 0-100-5"},
            {"Event_type": "Write_rows_v1", "Info": "table_id: 32 flags: STMT_END_F"},
            {"Event_type": "Gtid", "Info": "GTID 0-300-6"}]
    assert gtids_of_events(rows) == [(0, 100, 5), (0, 300, 6)]


def test_writes_on_a_replica_are_errant_and_counted_from_the_binlog() -> None:
    # db3 applied db1's 0-100-1..10 and wrote 0-300-4..8 itself (shared domain sequence)
    binlog = [(0, 100, q) for q in range(1, 11)] + [(0, 300, q) for q in range(4, 9)] + \
        [(99, 300, 1)]
    node = {(0, 100): 10, (0, 300): 8, (99, 300): 1}
    primary = {(0, 100): 10, (0, 200): 12}
    assert pairs_ahead(node, primary, {}) == {(0, 300): (0, 8)}  # heartbeat domain ignored
    rep = report(node, primary, {}, binlog)
    assert rep.count == 5 and rep.at_least == 1
    assert rep.gtids == ["0-300-4", "0-300-5", "0-300-6", "0-300-7", "0-300-8"]
    assert rep.by_source == {"0-300": 5}


def test_a_former_primary_holds_the_writes_its_replacement_lost() -> None:
    # db1 wrote 0-100-1..500; db2 got 1..470 before it was promoted, then wrote 0-200-471..
    old = {(0, 100): 500}
    new = {(0, 100): 470, (0, 200): 900}
    rep = report(old, new, {}, [(0, 100, q) for q in range(1, 501)])
    assert rep.count == 30 and rep.gtids[0] == "0-100-471" and rep.gtids[-1] == "0-100-500"


def test_the_baseline_is_not_counted_and_nothing_ahead_is_zero() -> None:
    binlog = [(0, 200, 1), (0, 200, 2), (0, 100, 3), (0, 200, 4)]
    assert errant(binlog, {(0, 100): 3}, {(0, 200): 2}) == [(0, 200, 4)]
    rep = report({(0, 100): 3}, {(0, 100): 3}, {}, None)
    assert rep.count == 0 and rep.at_least == 0


def test_unreadable_binlogs_leave_a_lower_bound_not_zero() -> None:
    rep = report({(0, 300): 8, (0, 400): 2}, {(0, 100): 10}, {}, None, "purged")
    assert rep.count is None and rep.at_least == 2


class FakeNode:
    name = "db3"

    def __init__(self, state: str, events: dict[str, list[dict[str, Any]]]) -> None:
        self.state, self.events, self.statements = state, events, []  # type: ignore[var-annotated]

    def scalar(self, statement: str, timeout: float = 5.0) -> Any:
        self.statements.append(statement)
        return self.state

    def sql(self, statement: str, timeout: float = 5.0) -> list[dict[str, Any]]:
        self.statements.append(statement)
        if statement == "SHOW BINARY LOGS":
            return [{"Log_name": f} for f in self.events]
        return self.events[statement.split("'")[1]]

    def is_running(self) -> bool:
        return True


def test_read_errant_reads_the_binlog_only_when_something_is_ahead() -> None:
    events = {"b.000001": [{"Event_type": "Gtid", "Info": "BEGIN GTID 0-100-1"}],
              "b.000002": [{"Event_type": "Gtid", "Info": "BEGIN GTID 0-300-2"}]}
    node = FakeNode("0-100-1,0-300-2", events)
    assert read_errant(node, {(0, 100): 1}, {}).count == 1
    assert "SHOW BINLOG EVENTS IN 'b.000002'" in node.statements
    calm = FakeNode("0-100-1", events)
    assert read_errant(calm, {(0, 100): 1}, {}).count == 0
    assert not any(s.startswith("SHOW") for s in calm.statements)


def test_the_checker_sums_nodes_and_an_unknown_node_makes_the_total_unknown() -> None:
    facts = {"errant_gtids": {"db1": {"count": 0, "at_least": 0, "gtids": []},
                              "db3": {"count": 5, "at_least": 1, "gtids": ["0-300-4"]}},
             "errant_gtids_authority": "db2"}
    r = check(history(), ctx(0, 1, facts=facts))
    assert r.valid is False and r.metrics["count"] == 5 and r.metrics["nodes"] == ["db3"]
    assert r.metrics["subjects"]["db3"]["count"] == 5
    facts["errant_gtids"]["db1"] = {"count": None, "at_least": 1, "error": "purged"}
    r = check(history(), ctx(0, 1, facts=facts))
    assert r.metrics["count"] is None and r.valid is False
    r = check(history(), ctx(0, 1, facts={"errant_gtids_why": "not replication"}))
    assert r.valid is None and r.metrics["count"] is None and "not replication" in r.details
