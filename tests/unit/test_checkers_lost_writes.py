from __future__ import annotations

from typing import Any

from histories import ctx, history, op
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.checkers import lost_writes


def w(p: int, t: float, key: int | None, value: Any, type: str = "ok", error: int | None = None,
      workload: str = "uw") -> list:  # type: ignore[type-arg]  # fmt: skip
    return op(p, "write", t, t + 0.1, type, key=key, value=value, workload=workload,  # type: ignore[arg-type]
              error=error)  # fmt: skip


def check(h: list, final: dict) -> Any:  # type: ignore[type-arg]
    return lost_writes.check(h, ctx(0, 10, final_state=final))


def test_all_acknowledged_present_is_valid() -> None:
    h = history(w(1, 0, 1, "a"), w(1, 1, 2, "b"))
    r = check(h, {"uw": {"db1": {1: "a", 2: "b"}, "db2": {1: "a", 2: "b"}}})
    assert r.valid is True
    assert r.metrics["count"] == 0
    assert r.metrics["subjects"]["uw"]["acknowledged"] == 2


def test_missing_on_one_node() -> None:
    h = history(w(1, 0, 1, "a"), w(1, 1, 2, "b"), w(1, 2, 3, "c"))
    r = check(h, {"uw": {"db1": {1: "a", 2: "b", 3: "c"}, "db2": {1: "a"}}})
    assert r.valid is False
    assert r.metrics["count"] == 2
    s = r.metrics["subjects"]
    assert s["uw on db2"]["count"] == 2 and s["uw on db2"]["keys"] == [2, 3]
    assert s["uw on db1"]["count"] == 0
    assert s["uw"]["lost"][0]["missing_on"] == ["db2"]


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
