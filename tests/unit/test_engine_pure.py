"""Pure parts of the engine: GTID parsing, failover phases from a history."""

from __future__ import annotations

from lab.engine import failover_phases
from runners.gtid import parse_gtid
from lab.history import NEMESIS, Op

S = 1_000_000_000


def test_parse_gtid_takes_the_highest_seq_per_domain() -> None:
    assert parse_gtid("0-100-5010,99-100-30") == {0: 5010, 99: 30}
    assert parse_gtid("") == {}
    assert parse_gtid("0-1-5, 0-2-7") == {0: 7}


def test_failover_phases_from_fault_to_first_write() -> None:
    h = [
        Op("invoke", "write", 1, 9 * S, "w"), Op("ok", "write", 1, int(9.1 * S), "w"),
        Op("invoke", "kill", NEMESIS, 10 * S, "nemesis", node="db1"),
        Op("ok", "kill", NEMESIS, int(10.01 * S), "nemesis", node="db1"),
        Op("invoke", "write", 1, int(10.5 * S), "w"), Op("info", "write", 1, int(11.5 * S), "w"),
        Op("invoke", "promote", NEMESIS, 12 * S, "nemesis", node="db2"),
        Op("ok", "promote", NEMESIS, int(12.02 * S), "nemesis", node="db2",
           value={"old_primary": "db1", "new_primary": "db2", "promote_seconds": 0.01,
                  "repoint_seconds": 0.005, "router_switch_seconds": 0.001}),
        Op("invoke", "write", 1, int(12.1 * S), "w"), Op("ok", "write", 1, int(12.2 * S), "w"),
    ]
    (p,) = failover_phases(h, 0)
    assert p["fault"] == "kill" and p["fault_at"] == 10.0
    assert p["detection_seconds"] == 2.0
    assert p["promoted_at"] == 2.02
    assert p["first_write_at"] == 2.2
    assert p["router_switch_seconds"] == 0.001


def test_no_promote_no_phases() -> None:
    assert failover_phases([Op("invoke", "kill", NEMESIS, 1, "nemesis", node="db1")], 0) == []
