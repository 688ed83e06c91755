"""The anomalies checker (Elle's list-append) on hand-built histories: one planted anomaly of each
kind, clean histories, undecidable ones, and the expectation reader."""

from __future__ import annotations

import json
from typing import Any

import pytest
from histories import ctx, history, txn

from dsl.models import Expectation, Metric, Quantity
from lab.history import Op
from lab.judge.checkers import anomalies, anomalies_txns
from lab.judge.checkers.base import CheckResult
from lab.judge.expectations import evaluate

KINDS = anomalies.KINDS


def check(*parts: Any) -> CheckResult:
    r = anomalies.check(history(*parts), ctx(0, 100, workloads={"la": "list_append"}))
    json.dumps(r.metrics, allow_nan=False)
    for row in r.rows():
        json.dumps(row.json)
    return r


def subject(r: CheckResult) -> dict[str, Any]:
    s = r.subject("la")
    assert s is not None
    return s


def only(r: CheckResult, **want: int) -> dict[str, Any]:
    """Exactly these counts, every other kind 0, and an invalid result."""
    s = subject(r)
    got = {k: s[k] for k in KINDS if s[k]}
    assert got == want, (got, s["examples"])
    assert s["count"] == sum(want.values())
    assert r.valid is False
    assert r.metrics["count"] == s["count"]
    return s


def example(s: dict[str, Any], kind: str) -> dict[str, Any]:
    ex = s["examples"][kind]
    assert 1 <= len(ex) <= anomalies.MAX_EXAMPLES
    return ex[0]  # type: ignore[no-any-return]


def processes(ex: dict[str, Any]) -> set[int]:
    return {t["process"] for t in ex["txns"]}


# --- clean histories ---------------------------------------------------------------------------


def test_a_serial_history_has_no_anomaly() -> None:
    r = check(
        txn(1, 0, 1, [["append", 1, 1]]),
        txn(1, 2, 3, [["r", 1, [1]], ["append", 1, 2], ["r", 2, []]]),
        txn(1, 4, 5, [["r", 1, [1, 2]], ["append", 2, 3]]),
        txn(1, 6, 7, [["r", 2, [3]]]),
    )
    s = subject(r)
    assert r.valid is True
    assert s["count"] == 0 and all(s[k] == 0 for k in KINDS)
    assert s["transactions"] == 4 and s["unknown"] == 0 and s["aborted"] == 0
    assert s["not_models"] == [] and s["examples"] == {}
    assert r.metrics["count"] == 0


def test_a_concurrent_serializable_history_has_no_anomaly() -> None:
    r = check(
        txn(1, 0, 3, [["append", 1, 1], ["append", 2, 1]]),
        txn(2, 1, 2, [["r", 1, []], ["r", 2, []]]),  # overlaps T1: ordered before it
        txn(3, 2.5, 6, [["r", 1, [1]], ["append", 1, 2]]),
        txn(2, 4, 5, [["r", 2, [1]], ["append", 2, 3]]),
        txn(1, 7, 8, [["r", 1, [1, 2]], ["r", 2, [1, 3]]]),
        txn(4, 0, 1, [["append", 3, 9]], "fail", error=1213),
        txn(5, 0, 9, [["append", 3, 10]], "info", error=2013),
    )
    s = subject(r)
    assert r.valid is True, s["examples"]
    assert s["count"] == 0
    assert (s["transactions"], s["aborted"], s["unknown"]) == (5, 1, 1)


# --- one planted anomaly each ------------------------------------------------------------------


def test_g0_write_cycle() -> None:
    s = only(check(
        txn(1, 0, 1, [["append", 1, 1], ["append", 2, 2]]),
        txn(2, 0, 1, [["append", 1, 3], ["append", 2, 4]]),
        txn(3, 2, 3, [["r", 1, [1, 3]]]),
        txn(4, 2, 3, [["r", 2, [4, 2]]]),
    ), g0=1)  # fmt: skip
    ex = example(s, "g0")
    assert ex["type"] == "G0" and processes(ex) == {1, 2}
    assert [st["type"] for st in ex["steps"]] == ["ww", "ww"]
    assert s["weakest_not"] == ["read-uncommitted"]


def test_g1c_circular_information_flow() -> None:
    """Elle's README example: T2 saw T1's append to y, T1's append to x came after T2's."""
    s = only(check(
        txn(1, 0, 1, [["append", 1, 1], ["r", 2, [1]]]),
        txn(2, 0, 1, [["append", 1, 2], ["append", 2, 1]]),
        txn(3, 2, 3, [["r", 1, [1, 2]]]),
    ), g1c=1)  # fmt: skip
    ex = example(s, "g1c")
    assert ex["type"] == "G1c" and processes(ex) == {1, 2}
    assert sorted(st["type"] for st in ex["steps"]) == ["wr", "ww"]
    assert "read-committed" in s["not_models"] and s["weakest_not"] == ["read-committed"]


def test_g_single_read_skew() -> None:
    s = only(check(
        txn(1, 0, 3, [["r", 1, []], ["r", 2, [1]]]),
        txn(2, 1, 2, [["append", 1, 1], ["append", 2, 1]]),
    ), g_single=1)  # fmt: skip
    ex = example(s, "g_single")
    assert ex["type"] == "G-single" and processes(ex) == {1, 2}
    assert sorted(st["type"] for st in ex["steps"]) == ["rw", "wr"]
    assert "T1" in ex["explanation"] and "T2" in ex["explanation"]
    assert {"snapshot-isolation", "serializable", "strict-serializable"} <= set(s["not_models"])
    assert "repeatable-read" not in s["not_models"]  # Elle: G-single is not G2-item


def test_g2_item_write_skew() -> None:
    s = only(check(
        txn(1, 0, 1, [["r", 1, []], ["r", 2, []], ["append", 1, 1]]),
        txn(2, 0, 1, [["r", 1, []], ["r", 2, []], ["append", 2, 2]]),
    ), g2_item=1)  # fmt: skip
    ex = example(s, "g2_item")
    assert ex["type"] == "G2-item" and processes(ex) == {1, 2}
    assert [st["type"] for st in ex["steps"]] == ["rw", "rw"]
    assert {"repeatable-read", "serializable"} <= set(s["not_models"])
    assert "snapshot-isolation" not in s["not_models"]  # write skew is allowed by SI


def test_lost_update_and_the_g2_item_cycle_it_implies() -> None:
    """Elle: a lost update is a G2-item (both read x = [1]; each one's append is after the
    version the other read): both are reported, as Elle does."""
    s = only(check(
        txn(3, 0, 0.2, [["append", 1, 1]]),
        txn(1, 0.5, 1, [["r", 1, [1]], ["append", 1, 2]]),
        txn(2, 0.5, 1, [["r", 1, [1]], ["append", 1, 3]]),
    ), lost_update=1, g2_item=1)  # fmt: skip
    ex = example(s, "lost_update")
    assert processes(ex) == {1, 2} and ex["key"] == 1 and ex["read"] == [1]
    assert sorted(ex["appended"]) == [2, 3]
    assert processes(example(s, "g2_item")) == {1, 2}
    assert {"repeatable-read", "snapshot-isolation", "cursor-stability"} <= set(s["not_models"])


def test_g1a_aborted_read() -> None:
    s = only(check(
        txn(1, 0, 1, [["append", 1, 5]], "fail", error=1213),
        txn(2, 2, 3, [["r", 1, [5]]]),
        txn(3, 4, 5, [["r", 1, [5]]]),  # the same aborted append seen again: still one
    ), g1a=1)  # fmt: skip
    ex = example(s, "g1a")
    assert [(t["process"], t["outcome"]) for t in ex["txns"]] == [(1, "fail"), (2, "ok")]
    assert ex["element"] == 5
    assert "read-committed" in s["not_models"]


def test_g1b_intermediate_read_and_its_cycle() -> None:
    """T2 saw T1's first append but not its second: G1b, and (as in Elle) the G-single cycle it
    makes (T1 -wr-> T2 -rw-> T1)."""
    s = only(check(
        txn(1, 0, 1, [["append", 1, 1], ["append", 1, 2]]),
        txn(2, 0.2, 0.8, [["r", 1, [1]]]),
    ), g1b=1, g_single=1)  # fmt: skip
    ex = example(s, "g1b")
    assert [t["process"] for t in ex["txns"]] == [1, 2] and ex["element"] == 1


def test_internal_inconsistency() -> None:
    s = only(check(
        txn(3, 0, 0.5, [["append", 1, 1]]),
        txn(1, 1, 2, [["r", 1, [1]], ["append", 1, 2], ["r", 1, [1]]]),
    ), internal=1)  # fmt: skip
    ex = example(s, "internal")
    assert processes(ex) == {1} and ex["expected"] == [1, 2] and ex["read"] == [1]


def test_future_read() -> None:
    s = only(check(txn(1, 0, 1, [["r", 1, [7]], ["append", 1, 7]])), future_read=1)
    assert processes(example(s, "future_read")) == {1}


def test_duplicate_elements() -> None:
    s = only(check(
        txn(3, 0, 0.5, [["append", 1, 1]]),
        txn(1, 1, 2, [["r", 1, [1, 1]]]),
    ), duplicate=1)  # fmt: skip
    ex = example(s, "duplicate")
    assert processes(ex) == {1} and ex["element"] == 1


def test_garbage_read() -> None:
    s = only(check(txn(1, 0, 1, [["r", 1, [99]]])), garbage=1)
    ex = example(s, "garbage")
    assert processes(ex) == {1} and ex["element"] == 99
    assert s["not_models"] == []  # Elle's model table names no model for it


def test_incompatible_order() -> None:
    s = only(check(
        txn(3, 0, 0.5, [["append", 1, 1]]),
        txn(4, 0, 0.5, [["append", 1, 2]]),
        txn(5, 0, 0.5, [["append", 1, 3]]),
        txn(1, 0.2, 2, [["r", 1, [1, 2]]]),
        txn(2, 0.2, 2, [["r", 1, [1, 3]]]),
    ), incompatible_order=1)  # fmt: skip
    ex = example(s, "incompatible_order")
    assert processes(ex) == {1, 2}
    assert sorted(map(tuple, ex["values"])) == [(1, 2), (1, 3)]


def test_a_cycle_that_needs_a_realtime_edge_is_a_stale_read_not_g_single() -> None:
    """T1's append completed before T2 began, yet T2 read the key empty: serializable (T2
    before T1), not strictly serializable."""
    s = only(check(
        txn(1, 0, 1, [["append", 1, 1]]),
        txn(2, 2, 3, [["r", 1, []]]),
    ), stale_read=1)  # fmt: skip
    ex = example(s, "stale_read")
    assert ex["type"] == "G-single-realtime" and processes(ex) == {1, 2}
    assert sorted(st["type"] for st in ex["steps"]) == ["realtime", "rw"]
    rt = next(st for st in ex["steps"] if st["type"] == "realtime")
    assert (rt["completed"], rt["invoked"]) == (1.0, 2.0)
    assert "strict-serializable" in s["not_models"] and "serializable" not in s["not_models"]


def test_examples_show_where_and_when() -> None:
    s = subject(check(
        txn(1, 10, 11, [["append", 1, 1]], node="db2"),
        txn(2, 12, 13.5, [["r", 1, []]], node="db3"),
    ))  # fmt: skip
    by_proc = {t["process"]: t for t in example(s, "stale_read")["txns"]}
    assert by_proc[1]["node"] == "db2" and by_proc[2]["node"] == "db3"
    assert (by_proc[2]["time"], by_proc[2]["end"]) == (12.0, 13.5)
    assert by_proc[2]["ops"] == [["r", 1, []]] and by_proc[1]["outcome"] == "ok"


def test_long_lists_are_shortened_in_examples() -> None:
    appends = [txn(3, i * 0.01, i * 0.01 + 0.005, [["append", 1, i]]) for i in range(20)]
    read = list(range(20)) + [999]
    s = subject(check(*appends, txn(1, 1, 2, [["r", 1, read]])))
    shown = example(s, "garbage")["txns"][0]["ops"][0][2]
    assert shown[0] == "...+13" and shown[1:] == read[-anomalies_txns.MAX_LIST:]


# --- unknown -----------------------------------------------------------------------------------


def test_only_failed_and_unknown_transactions_is_unknown_never_zero() -> None:
    r = check(
        txn(1, 0, 1, [["append", 1, 1]], "info", error=2013),
        txn(2, 0, 1, [["r", 1, []], ["append", 1, 2]], "fail", error=1213),
    )
    s = subject(r)
    assert r.valid is None
    assert s["decided"] is False and "no committed transaction read a key" in s["reason"]
    assert s["count"] is None and all(s[k] is None for k in KINDS)
    assert r.metrics["count"] is None
    assert (s["unknown"], s["aborted"], s["transactions"]) == (1, 1, 0)
    assert "no committed transaction read a key" in r.details


def test_no_list_append_workload_is_unknown_with_empty_metrics() -> None:
    r = anomalies.check(history(txn(1, 0, 1, [["r", 1, []]])), ctx(0, 10))
    assert r.valid is None and r.metrics == {} and "no list_append workload" in r.details


def test_appends_that_are_not_unique_are_unknown() -> None:
    r = check(txn(1, 0, 1, [["append", 1, 1]]), txn(2, 0, 1, [["append", 1, 1]]),
              txn(3, 2, 3, [["r", 1, [1]]]))  # fmt: skip
    assert r.valid is None and "appended to key 1 more than once" in subject(r)["reason"]


def test_tuples_are_accepted_like_lists() -> None:
    h = history(txn(1, 0, 1, [["append", 1, 1]]))
    h += [Op("invoke", "txn", 2, 2_000_000_000, "la", "db1", None, None, (("r", 1, None),)),
          Op("ok", "txn", 2, 3_000_000_000, "la", "db1", "db1", None, (("r", 1, (1,)),))]
    r = anomalies.check(h, ctx(0, 10, workloads={"la": "list_append"}))
    assert r.valid is True and subject(r)["transactions"] == 2


# --- the expectation reader --------------------------------------------------------------------


def _expect(stat: str | None, subject_: str | None = "la") -> Expectation:
    m = Metric.model_construct(name="anomalies", subject=subject_, stat=stat, on=None, code=None,
                               last=None)  # fmt: skip
    q = Quantity(value=0, kind="count", text="0")
    return Expectation.model_construct(metric=m, op="==", value=q, text="expect anomalies == 0",
                                       other=None, variant=None)  # fmt: skip


def _evaluate(e: Expectation, *parts: Any) -> Any:
    c = ctx(0, 100, workloads={"la": "list_append"})
    h = history(*parts)
    return evaluate(e, {"anomalies": anomalies.check(h, c)}, c, h)


def test_the_expectation_reads_each_kind() -> None:
    stale = [txn(1, 0, 1, [["append", 1, 1]]), txn(2, 2, 3, [["r", 1, []]])]
    o = _evaluate(_expect(None), *stale)
    assert o.passed is False and o.measured == 1
    assert _evaluate(_expect("stale_read"), *stale).measured == 1
    assert _evaluate(_expect("g_single"), *stale).passed is True
    clean = [txn(1, 0, 1, [["append", 1, 1]]), txn(2, 2, 3, [["r", 1, [1]]])]
    assert _evaluate(_expect("count"), *clean).passed is True
    assert _evaluate(_expect("count", None), *clean).passed is True


@pytest.mark.parametrize("subject_", ["la", None])
def test_the_expectation_is_unknown_when_the_checker_cannot_decide(subject_: str | None) -> None:
    o = _evaluate(_expect(None, subject_), txn(1, 0, 1, [["append", 1, 1]], "info"))
    assert o.passed is None and o.measured is None
    assert "unknown" in o.explanation and "no committed transaction read a key" in o.explanation


def test_the_expectation_on_another_workload_is_unknown() -> None:
    o = _evaluate(_expect(None, "nope"), txn(1, 0, 1, [["r", 1, []]]))
    assert o.passed is None and "no workload named 'nope'" in o.explanation
