from __future__ import annotations

from runners.gtid import (
    missing_galera,
    missing_multi_primary,
    missing_replication,
    parse_gtid,
)


def test_parse_takes_the_highest_seq_per_domain() -> None:
    assert parse_gtid("0-100-5010,99-100-30") == {0: 5010, 99: 30}
    assert parse_gtid("0-100-5,0-200-7") == {0: 7}
    assert parse_gtid("") == {}


def test_replication_replica_behind_and_heartbeat_ignored() -> None:
    got = missing_replication({0: 5000, 99: 400}, {"r1": {0: 0, 99: 3}, "r2": {0: 5000}})
    assert got == {"r1": 5000, "r2": 0}


def test_a_rejoined_former_primary_misses_nothing_it_wrote_itself() -> None:
    """db1 wrote 0-100-1..2021 as primary, was killed, db2 was promoted (it had all 2021) and
    wrote 0-200-2022..2100; db1 rejoined and caught up. Its gtid_slave_pos holds only what it
    applied as a replica (0-200-2100 after catching up) - but before it applied anything new,
    gtid_slave_pos was empty and the old code reported 2021 missing. gtid_current_pos (the
    newest of binlog and slave positions per domain) is what it really has."""
    primary = parse_gtid("0-200-2100")
    before_any_new_write = {"db1": parse_gtid("0-100-2021")}  # gtid_current_pos
    assert missing_replication(parse_gtid("0-200-2021"), before_any_new_write) == {"db1": 0}
    assert missing_replication(primary, {"db1": parse_gtid("0-200-2100")}) == {"db1": 0}
    assert missing_replication(primary, {"db1": parse_gtid("0-200-2050")}) == {"db1": 50}


def test_two_primaries_each_domain_is_its_writer_s() -> None:
    binlog = {"p1": {1: 100, 2: 40}, "p2": {1: 60, 2: 90}}
    current = {"p1": {1: 100, 2: 40}, "p2": {1: 60, 2: 90}}
    # p1 stopped applying p2's domain at 40 (SQL thread stopped on 1062), p2 at 60 of p1's
    assert missing_multi_primary(binlog, current) == {"p1": 50, "p2": 40}
    assert missing_multi_primary(binlog, {"p1": {1: 100, 2: 90}, "p2": {1: 100, 2: 90}}) == \
        {"p1": 0, "p2": 0}


def test_galera_distance_from_the_most_advanced_node() -> None:
    assert missing_galera({"g1": 500, "g2": 500, "g3": 470}) == {"g1": 0, "g2": 0, "g3": 30}
    assert missing_galera({}) == {}


def test_a_former_primary_rejoins_from_its_position_but_the_new_primarys_heartbeat() -> None:
    from runners.gtid import rejoin_position

    # its beats 99-100-143 never reached db2 (which beats as server 200 since the promote)
    assert rejoin_position("0-100-5016,99-100-143", "0-200-80,99-200-57") == \
        "0-100-5016,99-200-57"
    assert rejoin_position("0-100-7,99-100-3", "0-100-7") == "0-100-7"
    assert rejoin_position("0-100-7", "0-100-7,99-200-4") == "0-100-7,99-200-4"
