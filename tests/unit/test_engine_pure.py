"""Pure parts of the engine: GTID parsing, failover phases from a history."""

from __future__ import annotations

from runners.gtid import parse_gtid

S = 1_000_000_000


def test_parse_gtid_takes_the_highest_seq_per_domain() -> None:
    assert parse_gtid("0-100-5010,99-100-30") == {0: 5010, 99: 30}
    assert parse_gtid("") == {}
    assert parse_gtid("0-1-5, 0-2-7") == {0: 7}

