from __future__ import annotations

import pytest
from histories import ctx, history, op
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.judge.checkers import stale_reads
from lab.judge.checkers.stale_reads import version

RYW = {"w": "read_your_writes"}


def write(t0: float, t1: float, key: int, v: int, type: str = "ok", p: int = 1) -> list:  # type: ignore[type-arg]
    return op(p, "write", t0, t1, type, key=key, value=v, endpoint="router.writer", node="db1")  # type: ignore[arg-type]


def read(t0: float, t1: float, key: int, v: object, node: str = "db2", p: int = 2,
         type: str = "ok") -> list:  # type: ignore[type-arg]  # fmt: skip
    return op(p, "read", t0, t1, type, key=key, value=v, endpoint=node, node=node)  # type: ignore[arg-type]


def check(*parts):  # type: ignore[no-untyped-def]
    return stale_reads.check(history(*parts), ctx(0, 100, workloads=RYW))


def test_read_with_no_prior_acknowledged_write_is_not_stale() -> None:
    r = check(read(0, 0.1, 1, None), write(1, 1.1, 1, 1))
    s = r.metrics["subjects"]["w"]
    assert (s["count"], s["eligible_reads"], s["without_prior_write"]) == (0, 0, 1)
    assert r.metrics["rate"] is None
    assert r.valid is True


def test_absent_row_after_ack_is_stale() -> None:
    r = check(write(0, 1.0, 1, 1), read(1.5, 1.6, 1, None))
    assert r.metrics["count"] == 1
    assert r.metrics["rate"] == 1.0
    assert r.valid is False
    ex = r.metrics["examples"][0]
    assert ex["key"] == 1 and ex["read"] is None and ex["required"] == 1
    assert ex["time_behind"] == pytest.approx(0.5)
    assert ex["versions_behind"] == 1


def test_write_in_flight_during_the_read_is_not_required() -> None:
    # write acknowledged at 2.0, read began at 1.5: not stale whatever it returns
    r = check(write(1.0, 2.0, 1, 1), read(1.5, 2.5, 1, None))
    assert r.metrics["count"] == 0
    assert r.metrics["subjects"]["w"]["without_prior_write"] == 1


def test_read_began_exactly_at_ack_is_not_eligible() -> None:
    r = check(write(1.0, 2.0, 1, 1), read(2.0, 2.5, 1, None))
    assert r.metrics["subjects"]["w"]["eligible_reads"] == 0


def test_equal_or_newer_value_is_fresh() -> None:
    r = check(write(0, 1, 1, 1), write(2, 3, 1, 2), read(4, 4.1, 1, 2), read(5, 5.1, 1, 3, p=3))
    assert r.metrics["count"] == 0
    assert r.metrics["eligible_reads"] == 2
    assert r.metrics["rate"] == 0.0


def test_versions_and_time_behind() -> None:
    r = check(
        write(0, 1, 1, 1), write(1, 2, 1, 2), write(2, 3, 1, 3),
        read(5, 5.1, 1, 1),  # misses 2 and 3; newest missed acked at 3
        read(6, 6.1, 1, None, p=3),  # misses all 3
    )  # fmt: skip
    s = r.metrics["subjects"]["w"]
    assert s["count"] == 2
    assert s["versions_behind"] == {"2": 1, "3": 1}
    assert s["time_behind"]["max"] == pytest.approx(3.0)
    assert s["time_behind"]["p50"] == pytest.approx(2.0)


def test_failed_and_unknown_reads_are_ignored() -> None:
    r = check(write(0, 1, 1, 1), read(2, 3, 1, None, type="info"), read(4, 5, 1, None,
              type="fail", p=3))  # fmt: skip
    assert r.metrics["reads"] == 0


def test_failed_write_does_not_make_reads_stale() -> None:
    r = check(write(0, 1, 1, 1, type="fail"), write(2, 3, 1, 2, type="info", p=3),
              read(4, 4.1, 1, None))  # fmt: skip
    assert r.metrics["count"] == 0


def test_per_node_and_rate() -> None:
    r = check(
        write(0, 1, 1, 1),
        read(2, 2.1, 1, 1, node="db2"),
        read(2, 2.1, 1, None, node="db3", p=3),
        read(3, 3.1, 1, 1, node="db3", p=3),
    )
    subj = r.metrics["subjects"]
    assert subj["w on db2"]["count"] == 0
    assert subj["w on db3"]["count"] == 1
    assert subj["w on db3"]["rate"] == 0.5
    assert subj["w"]["rate"] == pytest.approx(1 / 3)
    assert subj["w"]["nodes"] == ["db2", "db3"]


def test_visibility_per_node() -> None:
    r = check(
        write(0, 1.0, 1, 1),
        read(1.1, 1.2, 1, None, node="db2"),
        read(1.3, 1.4, 1, 1, node="db2"),  # first seen on db2 at 1.4: 0.4 s after the ack
        read(0.5, 0.9, 1, 1, node="db1", p=3),  # seen on db1 before the ack: 0
        write(2, 3.0, 2, 1),
        read(3.5, 3.6, 2, None, node="db2"),  # key 2 never seen on db2
    )
    subj = r.metrics["subjects"]
    vis2 = subj["w on db2"]["visibility"]
    assert vis2["seen"] == 1 and vis2["p50"] == pytest.approx(0.4)
    # key 2 was still missing 0.6 s after its ack: the max is a bound, at least 0.6 s
    assert vis2["unseen"] == 1 and vis2["unseen_min_bound"] == pytest.approx(0.6)
    assert vis2["max"] == pytest.approx(0.6)
    assert vis2["resolution"] == pytest.approx(0.2)  # 1.2 (missed) -> 1.4 (seen)
    assert subj["w on db1"]["visibility"]["max"] == 0.0


def poll(t0: float, t1: float, pairs: list[list[int | None]], node: str = "db2",
         p: int = 2) -> list:  # type: ignore[type-arg]  # fmt: skip
    return op(p, "poll", t0, t1, "ok", value=pairs, endpoint=node, node=node)  # type: ignore[arg-type]


def test_delayed_replica_visibility_is_the_delay_within_one_poll() -> None:
    """A replica D = 2 s behind, polled every 10 ms: every write becomes visible D after its
    ack (within one poll interval), whatever the workload's timeout; the old one-key loop
    saturated at ~16 x the timeout. Writes every 50 ms for 6 s, polls every 10 ms."""
    parts: list = []  # type: ignore[type-arg]
    delay, poll_every = 2.0, 0.01
    acks: list[tuple[float, int, int]] = []  # ack, key, version

    def on_replica(k: int, at: float) -> int | None:
        vs = [v for ack, kk, v in acks if kk == k and ack + delay <= at]
        return max(vs) if vs else None

    for i in range(120):
        t = 1.0 + 0.05 * i
        key, v = i % 16, i // 16 + 1
        parts.append(write(t, t + 0.001, key, v))
        acks.append((t + 0.001, key, v))
        parts.append(read(t + 0.002, t + 0.003, key, on_replica(key, t + 0.003)))  # stale
    t = 1.0
    while t < 10.0:  # polls of all 16 keys every 10 ms
        parts.append(poll(t, t + 0.0005, [[k, on_replica(k, t + 0.0005)] for k in range(16)]))
        t += poll_every
    r = check(*parts)
    vis = r.metrics["subjects"]["w on db2"]["visibility"]
    assert vis["seen"] == 120 and vis["unseen"] == 0
    assert delay <= vis["p50"] <= delay + poll_every + 0.002
    assert delay <= vis["max"] <= delay + poll_every + 0.002
    assert vis["resolution"] == pytest.approx(poll_every, abs=0.001)
    sr = r.metrics["subjects"]["w on db2"]
    assert sr["count"] == 120 and sr["rate"] == 1.0  # every first read right after the ack
    # the polls are not reads: they are never counted as stale or eligible
    assert sr["eligible_reads"] == 120


def test_value_returned_as_text_is_compared_as_a_version() -> None:
    assert version("7") == 7 and version(7) == 7 and version(None) is None
    assert version("abc") is None and version(True) is None
    r = check(write(0, 1, 1, 2), read(2, 2.1, 1, "2"), read(3, 3.1, 1, "1", p=3))
    assert r.metrics["count"] == 1


def test_incomparable_values_are_counted_apart() -> None:
    r = check(write(0, 1, 1, 1), read(2, 2.1, 1, "x"))
    assert r.metrics["incomparable"] == 1 and r.metrics["count"] == 0


def test_workloads_are_separate() -> None:
    h = history(
        op(1, "write", 0, 1, key=1, value=5, workload="a"),
        op(2, "read", 2, 2.1, key=1, value=None, workload="b", node="db2"),
    )
    r = stale_reads.check(h, ctx(0, 10))
    assert r.metrics["count"] == 0
    assert r.metrics["subjects"]["b"]["without_prior_write"] == 1


def test_non_monotonic_versions_per_key() -> None:
    # a key rewritten with a lower version: the newest *version* acknowledged is required
    r = check(write(0, 1, 1, 5), write(1, 2, 1, 3), read(3, 3.1, 1, 3), read(4, 4.1, 1, 4, p=3))
    assert r.metrics["count"] == 2
    assert r.metrics["subjects"]["w"]["versions_behind"] == {"1": 2}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.integers(0, 2)), max_size=40))
def test_reads_of_the_newest_acknowledged_version_are_never_stale(
    steps: list[tuple[int, bool, int]],
) -> None:
    """One writer, sequential versions per key; readers return what a linearizable register
    returns (the newest version whose write took effect before the read), optionally lagging
    by ``lag`` versions: reads lagging behind an ack are exactly the stale ones."""
    t = 0.0
    ops = []
    acked: dict[int, list[tuple[float, int]]] = {}
    expected_stale = 0
    p = 10
    for key, is_write, lag in steps:
        if is_write:
            v = len(acked.get(key, [])) + 1
            ops.append(write(t, t + 0.5, key, v))
            acked.setdefault(key, []).append((t + 0.5, v))
            t += 1.0
        else:
            done = [v for (a, v) in acked.get(key, []) if a < t]
            newest = done[-1] if done else None
            got = None if newest is None or newest - lag <= 0 else newest - lag
            if newest is not None and lag > 0:
                expected_stale += 1
            p += 1
            ops.append(read(t, t + 0.1, key, got, p=p))
            t += 0.2
    r = check(*ops)
    assert r.metrics["count"] == expected_stale


def test_polls_after_the_first_read_count_for_visibility_not_for_staleness() -> None:
    def reread(t0: float, t1: float, v: object) -> list:  # type: ignore[type-arg]
        return op(2, "reread", t0, t1, "ok", key=1, value=v, endpoint="db2", node="db2")  # type: ignore[arg-type]

    r = check(write(0, 1.0, 1, 1), read(1.1, 1.2, 1, None), reread(1.3, 1.4, None),
              reread(1.5, 1.6, 1))
    assert (r.metrics["count"], r.metrics["eligible_reads"]) == (1, 1)  # one stale first read
    vis = r.metrics["subjects"]["w on db2"]["visibility"]
    assert vis["count"] == 1 and vis["max"] == pytest.approx(0.6)  # seen by the last poll
