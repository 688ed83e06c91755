"""Divergence: chunk checksums in primary-key order, then rows, on fake nodes."""

from __future__ import annotations

import hashlib
from typing import Any

from histories import ctx, history

from lab.judge.checkers.divergence import check
from runners.divergence import (
    CHUNK,
    TableShape,
    chunk_sql,
    compare_table,
    diff_rows,
    differing_chunks,
    rows_sql,
)

SHAPE = TableShape("lab", "w_w", ("k", "v", "c"), (), ("k",), True)


class FakeDb:
    """Answers the queries ``runners.divergence`` makes, over rows {k: (v, c)}."""

    def __init__(self, rows: dict[int, tuple[int, int]]) -> None:
        self.rows = rows
        self.queries: list[str] = []

    def __call__(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        self.queries.append(sql)
        if "information_schema.COLUMNS" in sql:
            return [("k", "NO", "bigint"), ("v", "NO", "bigint"), ("c", "NO", "int")]
        if "KEY_COLUMN_USAGE" in sql:
            return [("k",)]
        if "GROUP BY chunk" in sql:
            out: dict[int, list[int]] = {}
            for k, row in self.rows.items():
                acc = out.setdefault(k // CHUNK, [0, 0])
                acc[0] += 1
                acc[1] ^= int(self.h(k, row)[:16], 16)
            return [(c, n, x) for c, (n, x) in out.items()]
        chunks = {int(x) for x in sql.split(" IN (")[1].rstrip(")").split(", ")}
        return [(k, self.h(k, row)) for k, row in self.rows.items() if k // CHUNK in chunks]

    @staticmethod
    def h(k: int, row: tuple[int, int]) -> str:
        return hashlib.md5(f"{k}#{row[0]}#{row[1]}".encode()).hexdigest()


def test_the_sql_is_pt_table_checksums_expression() -> None:
    sql = chunk_sql(SHAPE)
    assert "BIT_XOR(CAST(CONV(LEFT(MD5(CONCAT_WS('#', `k`, `v`, `c`)), 16), 16, 10)" in sql
    assert "`k` DIV 1000 AS chunk" in sql
    assert rows_sql(SHAPE, [0, 3]).endswith("WHERE `k` DIV 1000 IN (0, 3)")
    whole = TableShape("lab", "t", ("a",), ("a",), ("a",), False)
    assert "ISNULL(`a`)" in chunk_sql(whole) and "WHERE" not in rows_sql(whole, [])


def test_diff_rows_and_chunks() -> None:
    d = diff_rows({(1,): "a", (2,): "b", (3,): "c"}, {(2,): "b", (3,): "X", (4,): "d"})
    assert (d.missing, d.extra, d.different) == ([(1,)], [(4,)], [(3,)])
    assert d.rows == 3
    assert differing_chunks({0: (5, 1), 1: (5, 2)}, {0: (5, 1), 1: (4, 2), 2: (1, 9)}) == [1, 2]


def test_seven_rows_deleted_on_a_replica() -> None:
    base = {k: (k, 1) for k in range(1, 3001)}
    replica = {k: v for k, v in base.items() if not 1 <= k <= 7}
    replica[2500] = (0, 0)  # and one row changed
    ref, other = FakeDb(base), FakeDb(dict(replica))
    diff = compare_table({"db1": ref, "db2": other}, "db1", "lab", "w_w")
    nd = diff.nodes["db2"]
    assert nd is not None
    assert len(nd.missing) == 7 and nd.extra == [] and nd.different == [(2500,)]
    assert nd.chunks == 2 and diff.chunks_total == 4 and diff.rows() == 8
    # only the two differing chunks were read row by row
    assert sum("IN (" in q for q in other.queries) == 1 and "IN (0, 2)" in other.queries[-1]
    same = compare_table({"db1": FakeDb(base), "db2": FakeDb(dict(base))}, "db1", "lab", "w_w")
    assert same.rows() == 0


def test_an_unreadable_node_is_unknown_not_zero() -> None:
    def broken(sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        raise RuntimeError("lost connection")

    diff = compare_table({"db1": FakeDb({1: (1, 1)}), "db2": broken}, "db1", "lab", "w_w")
    assert diff.rows() is None and diff.as_json()["rows"] is None
    assert "lost connection" in diff.errors["db2"]


def test_no_primary_key_is_said() -> None:
    class NoKey(FakeDb):
        def __call__(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            return [] if "KEY_COLUMN_USAGE" in sql else super().__call__(sql, args)

    diff = compare_table({"db1": NoKey({}), "db2": NoKey({})}, "db1", "lab", "w_w")
    assert "no primary key" in diff.error and diff.rows() is None


def test_the_checker_per_workload_per_node_and_in_total() -> None:
    base = {k: (k, 1) for k in range(1, 100)}
    t = compare_table({"db1": FakeDb(base), "db2": FakeDb({k: base[k] for k in range(8, 100)}),
                       "db3": FakeDb({**base, 500: (1, 1)})}, "db1", "lab", "w_w")
    facts = {"divergence": {"reference": "db1", "workloads": {"w": ["lab.w_w"]},
                            "tables": {"lab.w_w": t.as_json(),
                                       "lab.other": {"rows": 2, "missing": 2, "extra": 0,
                                                     "different": 0, "chunks": 1}}}}
    r = check(history(), ctx(0, 1, facts=facts))
    s = r.metrics["subjects"]
    assert s["w"]["rows"] == 8 and s["w"]["missing"] == 7 and s["w"]["extra"] == 1
    assert s["w on db2"]["rows"] == 7 and s["w on db3"]["extra"] == 1
    assert r.metrics["rows"] == 10 and r.metrics["unowned"] == ["lab.other"]
    assert r.valid is False
    r = check(history(), ctx(0, 1, facts={}))
    assert r.valid is None and r.metrics["rows"] is None
