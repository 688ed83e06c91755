"""Issue 24, item 8: a wait that times out says how far it got (``fault.waits``)."""

from __future__ import annotations

from fault.waits import Progress, behind_message, progress_message


def test_a_replica_catching_up_says_its_distance_and_its_rate() -> None:
    samples = [(0.0, 9700), (25.0, 4462), (27.5, 3937), (30.0, 3412)]
    assert behind_message("db2", samples, "transactions", 30.0) == (
        "db2 was 3,412 transactions behind after 30 s, catching up at 210/s "
        "(about 16 s more at that rate)")


def test_falling_behind_not_moving_and_a_single_reading() -> None:
    assert behind_message("db2", [(0.0, 100), (4.0, 300)], "transactions", 5.0) == (
        "db2 was 300 transactions behind after 5 s, falling behind at 50/s")
    assert behind_message("db3", [(0.0, 26), (0.5, 26), (1.0, 26)], "transactions", 1.0) == (
        "db3 was 26 transactions behind after 1 s, not catching up (26 behind 1 s earlier)")
    assert behind_message("db2", [(0.0, 7)], "bytes of binary log", 0.2) == (
        "db2 was 7 bytes of binary log behind after 0 s")
    assert behind_message("db2", [(0.0, 6), (2.0, 3)], "transactions", 2.0).endswith(
        "catching up at 1.5/s (about 2 s more at that rate)")
    assert behind_message("db2", [(0.0, 0), (1.0, 0)], "transactions", 1.0) == (
        "db2 was 0 transactions behind after 1 s, yet not caught up")


def test_the_rate_is_the_last_seconds_not_the_whole_wait() -> None:
    """Stalled for 20 s, then closing at 100/s: the rate said is the recent one."""
    samples = [(float(t), 5000) for t in range(0, 21)] + [(25.0, 4500), (30.0, 4000)]
    assert "catching up at 100/s" in behind_message("db2", samples, "transactions", 30.0)


def test_the_message_of_every_node_distances_and_states() -> None:
    p = Progress()
    p.distance("db3", 0.0, 10)
    p.distance("db3", 1.0, 10)
    p.distance("db2", 1.0, 5)
    p.state("db2", "it did not answer: (2003, \"Can't connect\")")  # the last reading failed
    p.state("g1", "wsrep_local_state 1 (Joining), cluster_status Primary, ready OFF, view 3")
    assert progress_message(p, 30.2) == (
        "db3 was 10 transactions behind after 30 s, not catching up (10 behind 1 s earlier); "
        "db2 after 30 s: it did not answer: (2003, \"Can't connect\") (last read: 5 "
        "transactions behind at 1 s); "
        "g1 after 30 s: wsrep_local_state 1 (Joining), cluster_status Primary, ready OFF, "
        "view 3")
    p.state("", "no writer up at the router")
    assert "; after 30 s: no writer up at the router; db2 after" in progress_message(p, 30.2)
    assert progress_message(Progress(), 2.0) == "nothing could be read of it in 2 s"
    q = Progress()
    q.state("db2", "it did not answer")
    q.distance("db2", 2.0, 3)  # read again: the distance is the news
    assert progress_message(q, 2.0) == "db2 was 3 transactions behind after 2 s"
