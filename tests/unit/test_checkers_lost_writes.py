from __future__ import annotations

from typing import Any

from histories import ctx, history, op
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.judge.checkers import lost_writes


def w(p: int, t: float, key: int | None, value: Any, type: str = "ok", error: int | None = None,
      workload: str = "uw") -> list:  # type: ignore[type-arg]  # fmt: skip
    return op(p, "write", t, t + 0.1, type, key=key, value=value, workload=workload,  # type: ignore[arg-type]
              error=error)  # fmt: skip


def check(h: list, final: dict, authority: str | None = "db1",  # type: ignore[type-arg]
          workloads: dict[str, str] | None = None) -> Any:
    facts = {"authority": authority} if authority else {}
    return lost_writes.check(h, ctx(0, 10, final_state=final, facts=facts, workloads=workloads))


def test_all_acknowledged_present_is_valid() -> None:
    h = history(w(1, 0, 1, "a"), w(1, 1, 2, "b"))
    r = check(h, {"uw": {"db1": {1: "a", 2: "b"}, "db2": {1: "a", 2: "b"}}})
    assert r.valid is True
    assert r.metrics["count"] == 0
    assert r.metrics["subjects"]["uw"]["acknowledged"] == 2


def test_missing_on_one_node() -> None:
    h = history(w(1, 0, 1, "a"), w(1, 1, 2, "b"), w(1, 2, 3, "c"))
    # db1 (the primary at the end) has them all: a replica behind is "not replicated"
    r = check(h, {"uw": {"db1": {1: "a", 2: "b", 3: "c"}, "db2": {1: "a"}}})
    assert r.valid is True
    assert r.metrics["count"] == 0 and r.metrics["not_replicated"] == 2
    s = r.metrics["subjects"]
    assert s["uw on db2"]["not_replicated"] == 2 and s["uw on db2"]["keys"] == [2, 3]
    assert s["uw on db1"]["count"] == 0
    # missing on the authority: lost
    r = check(h, {"uw": {"db1": {1: "a"}, "db2": {1: "a", 2: "b", 3: "c"}}})
    assert r.valid is False and r.metrics["count"] == 2
    assert r.metrics["subjects"]["uw"]["lost"][0]["missing_on"] == ["db1"]
    assert r.metrics["subjects"]["uw on db1"]["not_replicated"] == 0


def test_value_mismatch_counts_as_lost() -> None:
    h = history(w(1, 0, 1, "a"))
    r = check(h, {"uw": {"db1": {1: "zzz"}}})
    assert r.metrics["count"] == 1
    assert r.metrics["subjects"]["uw on db1"]["value_mismatch"] == 1


def test_value_as_text_and_newer_versions_count_as_present() -> None:
    h = history(w(1, 0, 1, 5), w(1, 1, 2, 1), w(1, 2, 2, 2))
    r = check(h, {"uw": {"db1": {1: "5", 2: 2}}})
    assert r.metrics["count"] == 0


def test_overwritten_by_a_later_write_is_not_lost() -> None:
    h = history(w(1, 0, 1, "a"), w(1, 1, 1, "b"))
    assert check(h, {"uw": {"db1": {1: "b"}}}).metrics["count"] == 0
    # ... but the later write missing is lost
    assert check(h, {"uw": {"db1": {1: "a"}}}).metrics["count"] == 1


def test_unknown_outcome_listed_apart_with_whether_applied() -> None:
    h = history(w(1, 0, 1, "a"), w(1, 1, 2, "b", "info"), w(1, 2, 3, "c", "info"))
    r = check(h, {"uw": {"db1": {1: "a", 2: "b"}, "db2": {1: "a"}}})
    assert r.valid is True  # unknown outcomes are never "lost"
    assert r.metrics["count"] == 0
    assert r.metrics["unknown"] == 2
    assert r.metrics["unknown_applied"] == 1
    ops = {o["key"]: o for o in r.metrics["subjects"]["uw"]["unknown_ops"]}
    assert ops[2]["applied"] == {"db1": True, "db2": False}
    assert ops[2]["applied_anywhere"] is True
    assert ops[3]["applied_anywhere"] is False


def test_incomplete_write_is_unknown() -> None:
    h = history(w(1, 0, 1, "a")[:1])
    r = check(h, {"uw": {"db1": {}}})
    assert r.metrics["unknown"] == 1 and r.metrics["count"] == 0


def test_failed_write_that_appears_is_flagged_but_duplicate_key_is_not() -> None:
    h = history(w(1, 0, 1, "a", "fail"), w(1, 1, 2, "b", "fail", error=1062), w(2, 1, 2, "b"))
    r = check(h, {"uw": {"db1": {1: "a", 2: "b"}}})
    assert r.metrics["failed_but_present"] == 1
    assert r.valid is False


def test_unkeyed_acknowledged_inserts_cannot_be_checked() -> None:
    h = history(w(1, 0, None, "a"))
    r = check(h, {"uw": {"db1": {}}})
    assert r.metrics["unkeyed"] == 1 and r.metrics["count"] == 0


def test_no_final_state_is_unknown() -> None:
    h = history(w(1, 0, 1, "a"))
    r = check(h, {})
    assert r.valid is None
    assert r.metrics["unchecked_workloads"] == ["uw"]
    assert "no final state" in r.details


def test_only_workloads_with_a_final_state_are_checked() -> None:
    h = history(w(1, 0, 1, "a"), w(2, 0, 1, "x", workload="other"))
    r = check(h, {"uw": {"db1": {1: "a"}}})
    assert r.valid is True
    assert r.metrics["unchecked_workloads"] == ["other"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["ok", "fail", "info"]), st.booleans()), max_size=30))
def test_lost_is_exactly_the_acknowledged_writes_missing(
    outcomes: list[tuple[str, bool]],
) -> None:
    """Each write i has an outcome and is present in the final state or not: lost writes are
    exactly the acknowledged ones that are absent; unknown ones are never lost."""
    h = history(*[w(1, i, i, f"v{i}", ty) for i, (ty, _) in enumerate(outcomes)])
    final = {i: f"v{i}" for i, (_, present) in enumerate(outcomes) if present}
    r = check(h, {"uw": {"db1": final}})
    lost = sum(1 for ty, present in outcomes if ty == "ok" and not present)
    assert r.metrics["count"] == lost
    assert r.metrics["unknown"] == sum(1 for ty, _ in outcomes if ty == "info")
    assert r.metrics["unknown_applied"] == sum(1 for ty, p in outcomes if ty == "info" and p)
    assert r.metrics["failed_but_present"] == sum(1 for ty, p in outcomes if ty == "fail" and p)


def test_authority_not_running_makes_lost_writes_unknown() -> None:
    h = history(w(1, 0, 1, "a"))
    r = check(h, {"uw": {"db2": {}}})  # db1, the authority, could not be read
    assert r.valid is None and r.metrics["unchecked"] == 1 and r.metrics["count"] == 0


def wn(p: int, t: float, key: int, value: Any, node: str, type: str = "ok") -> list:  # type: ignore[type-arg]
    return op(p, "insert", t, t + 0.1, type, key=key, value=value, workload="ui", node=node)  # type: ignore[arg-type]


def test_two_primaries_auto_increment_collisions_are_all_counted() -> None:
    """Two primaries without auto-increment offsets both hand out key 1..n; each insert's
    value is unique (not a client id), so every insert overwritten by the other primary's row
    is missing where it was acknowledged. The old checker read client ids as versions and so
    counted only the inserts of the lower-numbered client: about half."""
    h = history(*[wn(1, i, i, 1000 + i, "p1") for i in range(1, 11)],
                *[wn(100001, i, i, 2000 + i, "p2") for i in range(1, 11)])
    # each primary applied its own rows, then the other's replicated inserts failed on 1062
    final = {"ui": {"p1": {i: 1000 + i for i in range(1, 11)},
                    "p2": {i: 2000 + i for i in range(1, 11)}}}
    r = check(h, final, authority=None)
    assert r.metrics["count"] == 0  # each is present where it was acknowledged
    assert r.metrics["divergent"] == 10
    assert r.metrics["not_replicated"] == 20  # each side misses the other's 10 rows
    # the replicated row overwrote the local one on p1 (e.g. a REPLACE): p1's 10 are lost
    final["ui"]["p1"] = {i: 2000 + i for i in range(1, 11)}
    r = check(h, final, authority=None)
    assert r.metrics["count"] == 10 and r.metrics["divergent"] == 0


def test_versions_count_as_present_only_for_read_your_writes() -> None:
    h = history(w(1, 0, 1, 5))
    assert check(h, {"uw": {"db1": {1: 7}}}).metrics["count"] == 1
    r = check(h, {"uw": {"db1": {1: 7}}}, workloads={"uw": "read_your_writes"})
    assert r.metrics["count"] == 0


def test_a_write_whose_connect_failed_is_never_failed_but_present() -> None:
    """Item 7: a connect that failed never sent the write. Galera-failover reported 10,030
    false 'failed but present' from those (and from retries reusing the value)."""
    h = history(
        op(1, "write", 0, 0.1, "fail", key=1, value=1, workload="uw", error=2003,
           error_msg="Can't connect"),
        op(1, "write", 1, 1.1, "fail", key=2, value=2, workload="uw", error=2013,
           error_msg="not sent: Lost connection at handshake"),
        op(1, "write", 2, 2.1, "ok", key=1, value=1, workload="uw"),
        op(1, "write", 3, 3.1, "ok", key=2, value=2, workload="uw"),
    )
    r = check(h, {"uw": {"db1": {1: 1, 2: 2}}})
    assert r.metrics["failed_but_present"] == 0 and r.valid is True
    # a statement that was sent and refused (1290 read-only), yet present: still flagged
    h = history(op(1, "write", 0, 0.1, "fail", key=3, value=3, workload="uw", error=1290))
    assert check(h, {"uw": {"db1": {3: 3}}}).metrics["failed_but_present"] == 1
