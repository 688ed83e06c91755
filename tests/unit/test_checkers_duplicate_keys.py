from __future__ import annotations

from histories import ctx, history, op

from lab.judge.checkers import duplicate_keys


def ins(p: int, t: float, key: int, node: str, error: int | None = None, w: str = "ins") -> list:  # type: ignore[type-arg]
    ty = "fail" if error else "ok"
    return op(p, "insert", t, t + 0.1, ty, key=key, value=key, endpoint=node, node=node,  # type: ignore[arg-type]
              error=error, workload=w)  # fmt: skip


def test_counts_per_workload_and_node_with_keys() -> None:
    h = history(
        ins(1, 0, 1, "db1"), ins(2, 0, 1, "db2", 1062), ins(2, 1, 2, "db2", 1062),
        ins(1, 1, 3, "db1", 11000), ins(1, 2, 4, "db1", 1213),
    )  # fmt: skip
    r = duplicate_keys.check(h, ctx(0, 10))
    assert r.valid is False
    assert r.metrics["count"] == 3
    s = r.metrics["subjects"]
    assert s["ins"]["count"] == 3
    assert sorted(s["ins"]["keys"]) == [1, 2, 3]
    assert s["ins"]["by_code"] == {"1062": 2, "11000": 1}
    assert s["ins on db2"]["count"] == 2 and s["ins on db2"]["keys"] == [1, 2]
    assert s["ins on db1"]["count"] == 1


def test_no_duplicates_is_valid_and_declared_workloads_get_a_zero() -> None:
    h = history(ins(1, 0, 1, "db1"))
    r = duplicate_keys.check(h, ctx(0, 10, workloads={"ins": "unique_insert"}))
    assert r.valid is True
    assert r.metrics["subjects"]["ins"]["count"] == 0


def test_key_list_is_capped() -> None:
    h = history(*[ins(1, i, i, "db1", 1062) for i in range(duplicate_keys.MAX_KEYS + 5)])
    s = duplicate_keys.check(h, ctx(0, 1000)).metrics["subjects"]["ins"]
    assert s["count"] == duplicate_keys.MAX_KEYS + 5
    assert len(s["keys"]) == duplicate_keys.MAX_KEYS
    assert s["keys_truncated"] is True
