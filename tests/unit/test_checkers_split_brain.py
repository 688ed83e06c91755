"""split_brain: two or more nodes taking writes at once, from read_only samples and writes."""

from __future__ import annotations

import pytest
from histories import ctx, fault, history, ns, op

from lab.history import Sample
from lab.judge.checkers.split_brain import check, merge, overlaps

S = 1_000_000_000


def ro(node: str, t: float, value: float | None) -> Sample:
    values = {"unreadable": 1.0} if value is None else {"read_only": value}
    return Sample("replication", node, ns(t), values)


def series(node: str, states: list[tuple[float, float, float | None]], step: float = 0.2
           ) -> list[Sample]:
    """read_only samples every ``step`` s: (from, to, value) pieces."""
    out: list[Sample] = []
    for a, b, v in states:
        t = a
        while t < b - 1e-9:
            out.append(ro(node, round(t, 6), v))
            t += step
    return out


def writes(node: str, times: list[float], *, process: int = 1, workload: str = "w",
           type: str = "ok", error: int | None = None) -> list:  # type: ignore[type-arg]
    out = []
    for i, t in enumerate(times):
        out += op(process, "write", t, t + 0.002, type, key=i, value=i, node=node,  # type: ignore[arg-type]
                  endpoint=node, workload=workload, error=error)
    return out


def test_merge_and_overlaps() -> None:
    assert merge([(5, 7), (1, 2), (2, 3)]) == [(1, 3), (5, 7)]
    got = overlaps({"a": [(0, 10 * S)], "b": [(2 * S, 4 * S), (6 * S, 6 * S)]})
    assert got == [((2 * S, 4 * S), ["a", "b"]), ((6 * S, 6 * S), ["a", "b"])]
    assert overlaps({"a": [(0, 1)], "b": [(2, 3)]}) == []


def test_a_replica_made_writable_for_two_seconds() -> None:
    samples = series("db1", [(0, 12, 0.0)]) + series("db2", [(0, 5.1, 1.0), (5.1, 7.1, 0.0),
                                                             (7.1, 12, 1.0)])
    h = history(writes("db1", [i / 10 for i in range(1, 115)]),
                writes("db2", [5.05 + i / 10 for i in range(19)], process=2, workload="rogue"))
    r = check(h, ctx(0, 12, samples=samples, facts={"topology": "replication"}))
    m = r.metrics
    assert r.valid is False
    assert m["count"] == 1
    # db2 writable from its first write (5.052) to the first sample showing read_only=1 (7.1)
    assert m["longest"] == pytest.approx(7.1 - 5.052, abs=1e-6)
    assert m["windows"][0]["nodes"] == ["db1", "db2"]
    assert m["writes_by_workload"] == {"rogue": 19, "w": 20}
    assert m["subjects"]["db2"]["writes"] == 19
    assert m["lower_bound"] is False and m["evidence"] == "read_only samples and writes"


def test_a_clean_failover_is_no_split_brain() -> None:
    # db1 killed at 10 s (its samples unreadable from 10.1), db2 promoted at 11 s
    samples = series("db1", [(0, 10.1, 0.0), (10.1, 20, None)]) + \
        series("db2", [(0, 11.1, 1.0), (11.1, 20, 0.0)])
    h = history(writes("db1", [i / 10 for i in range(1, 100)]),
                fault("kill", 10.0, 10.01, node="db1"),
                writes("db2", [11.2 + i / 10 for i in range(80)], process=2))
    r = check(h, ctx(0, 20, samples=samples, facts={"topology": "replication"}))
    assert r.valid is True and r.metrics["count"] == 0 and r.metrics["longest"] == 0.0


def test_a_kill_ends_writability_before_the_next_sample() -> None:
    # samples every 0.2 s: db1's last read_only=0 sample at 10.0, killed at 10.01; db2 writable
    # (sampled) from 10.1: without the kill's exact time they would overlap for 0.1 s
    samples = series("db1", [(0, 10.2, 0.0), (10.2, 14, None)]) + \
        series("db2", [(0.1, 10.1, 1.0), (10.1, 14, 0.0)])
    h = history(fault("kill", 10.01, 10.02, node="db1"))
    r = check(h, ctx(0, 14, samples=samples, facts={"topology": "replication"}))
    assert r.metrics["count"] == 0


def test_a_promote_that_leaves_the_old_primary_writable_stays_open() -> None:
    samples = series("db1", [(0, 20, 0.0)]) + series("db2", [(0, 12, 1.0), (12, 20, 0.0)])
    r = check(history(), ctx(0, 20, samples=samples, facts={"topology": "replication"}))
    m = r.metrics
    assert m["count"] == 1 and m["windows"][0]["open"] is True and m["lower_bound"] is True
    assert m["longest"] == pytest.approx(19.8 - 12.0, abs=1e-6)
    assert m["writes"] == 0


def test_a_refused_write_ends_a_write_span_but_a_duplicate_key_does_not() -> None:
    h = history(writes("db1", [1.0, 9.0]),
                writes("db2", [2.0], process=2), writes("db2", [3.0], process=2, type="fail",
                                                        error=1290),
                writes("db2", [4.0], process=2),
                writes("db3", [2.0], process=3), writes("db3", [3.0], process=3, type="fail",
                                                        error=1062),
                writes("db3", [4.0], process=3))
    r = check(h, ctx(0, 10, facts={"topology": "replication"}))
    m = r.metrics
    # no samples: from the writes alone, a lower bound
    assert m["evidence"] == "writes only" and m["lower_bound"] is True
    # db1 writes 1.002..9.002; db3 spans 2.002..4.002; db2 only points at 2.002 and 4.002
    assert m["count"] == 1 and m["longest"] == pytest.approx(2.0)
    assert m["subjects"]["db2"]["writable"] == 0.0


@pytest.mark.parametrize("topology", ["primary_primary", "galera"])
def test_several_writers_by_design_is_unknown_not_zero(topology: str) -> None:
    h = history(writes("p1", [1.0, 2.0]), writes("p2", [1.5], process=2))
    r = check(h, ctx(0, 3, facts={"topology": topology}))
    assert r.valid is None and r.metrics["longest"] is None and r.metrics["count"] is None


def test_single_is_zero_and_no_evidence_is_unknown() -> None:
    assert check(history(), ctx(0, 3, facts={"topology": "single"})).metrics["longest"] == 0.0
    r = check(history(), ctx(0, 3, facts={"topology": "replication"}))
    assert r.valid is None and r.metrics["longest"] is None
