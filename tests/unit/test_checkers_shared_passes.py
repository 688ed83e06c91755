"""The checkers share their passes over the history (issue 25, item 3): the pairing, the groups
by operation and by (workload, node), the faults' records, downtime's outage windows (warmup
reads them too). Sharing must never change a result: every checker run alone, on a context of
its own, gives exactly what it gives among all the others, on a generated history with every
workload kind, outages, stale reads, duplicates and faults (bench/bench_checkers.py's)."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_checkers  # noqa: E402

from lab.judge.checkers import ALL_CHECKERS, CheckContext, run_checkers  # noqa: E402
from lab.judge.checkers.lost_writes import _divergent  # noqa: E402
from lab.judge.expectations import evaluate_all  # noqa: E402


def same(a: Any, b: Any) -> bool:
    """Equal, of the same types, dicts in the same order (what is stored and printed)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def fresh(ctx: CheckContext) -> CheckContext:
    return CheckContext(workloads=ctx.workloads, load_start=ctx.load_start,
                        load_end=ctx.load_end, final_state=ctx.final_state,
                        samples=ctx.samples, facts=ctx.facts)  # fmt: skip


@pytest.mark.parametrize("ops,seed", [(6_000, 1), (20_000, 7)])
def test_every_checker_alone_gives_what_it_gives_among_the_others(ops: int, seed: int) -> None:
    history, ctx = bench_checkers.build(ops, seed)
    together = run_checkers(history, ctx)
    assert set(together) == set(ALL_CHECKERS)
    for name, fn in ALL_CHECKERS.items():
        alone = run_checkers(history, fresh(ctx), {name: fn})[name]
        got = together[name]
        assert (got.valid, got.details) == (alone.valid, alone.details), name
        assert same(got.metrics, alone.metrics), name
    # the expectations read the results alike, whichever way they were computed
    exps = bench_checkers.expectations()
    a = evaluate_all(exps, together, ctx)
    other = fresh(ctx)
    b = evaluate_all(exps, run_checkers(history, other), other)
    assert [(o.passed, o.explanation) for o in a] == [(o.passed, o.explanation) for o in b]
    assert any(o.passed is True for o in a) and any(o.passed is False for o in a)


def test_shared_passes_are_computed_once_per_history() -> None:
    history, ctx = bench_checkers.build(3_000)
    run_checkers(history, ctx)
    cached = {k: v[2] for k, v in ctx.cache.items()}
    # the columns are the shared pass now (issue 25 item 3): no checker makes the Completed
    # objects of the whole history ("paired", "by_where") any more
    assert {"columns", "by_f", "downtime.windows"} <= set(cached)
    run_checkers(history, ctx)
    assert all(ctx.cache[k][2] is v for k, v in cached.items())  # reused, not recomputed
    nemesis = ctx.nemesis(history)
    assert nemesis and all(op.process < 0 for op in nemesis)
    groups = ctx.by_where(history)
    assert sum(len(cs) for cs in groups.values()) == len(ctx.paired(history).ops)
    assert all((c.workload, c.node or c.endpoint) == k for k, cs in groups.items() for c in cs)


def _divergent_by_text(final: dict[str, dict[int, Any]]) -> int:
    """Keys held by two or more nodes with different values, by their text (the definition)."""
    nodes = list(final)
    if len(nodes) < 2:
        return 0
    keys = set().union(*(set(final[n]) for n in nodes))
    return sum(1 for k in keys if len({str(final[n][k]) for n in nodes if k in final[n]}) > 1)


def test_divergent_keys_fast_path_counts_as_the_text_comparison() -> None:
    rnd = random.Random(3)
    values: list[Any] = [1, 1.0, True, "1", None, 2, 10**20, 10**20 + 0, -0.0, 0.0, 0, "a",
                         [1], (1,), b"1"]  # fmt: skip
    for _ in range(300):
        final = {
            f"db{i}": {k: rnd.choice(values) for k in range(12) if rnd.random() < 0.8}
            for i in range(rnd.randint(1, 4))
        }
        assert _divergent(final) == _divergent_by_text(final), final
    same_map = {k: k * 7 for k in range(100)}
    assert _divergent({"db1": same_map, "db2": same_map, "db3": dict(same_map)}) == 0
