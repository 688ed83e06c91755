"""lost_updates (read_modify_write) and bank (the accounts' total): planted histories of known
size, and the expectation readers' verdicts, bounds and unknowns."""

from __future__ import annotations

from typing import Any

from histories import history, ns, op

from dsl.models import Metric, Quantity
from lab.history import Op
from lab.judge.checkers import txn_state
from lab.judge.checkers.base import CheckContext, CheckResult, WorkloadInfo
from lab.judge.expectations import Measured, Unmeasurable, measure


def rmw(process: int, t0: float, t1: float, key: int, read: int, type: str = "ok",
        **kw: Any) -> list[Op]:
    value = [read, read + 1] if type == "ok" else None
    return op(process, "rmw", t0, t1, type, workload="c", key=key, value=value, **kw)  # type: ignore[arg-type]


def rmw_ctx(final: dict[int, int] | None, **facts: Any) -> CheckContext:
    return CheckContext(
        workloads={"c": WorkloadInfo("read_modify_write", ("db1",), (), 1)},
        load_start=ns(0), load_end=ns(10),
        final_state={} if final is None else {"c": {"db1": final}},
        facts={"authority": "db1", **facts})


def test_serial_increments_lose_nothing_exactly() -> None:
    h = history(*(rmw(1, i, i + 0.5, 0, i) for i in range(5)))
    r = txn_state.check_lost_updates(h, rmw_ctx({0: 5}))
    s = r.metrics["subjects"]["c"]
    assert (r.valid, s["count"], s["acknowledged"], s["growth"], s["same_read"]) == (
        True, 0, 5, 5, 0)


def test_two_increments_that_read_the_same_value_lose_one() -> None:
    # T1 and T2 both read 3 and both write 4: the counter grew by 4 for 5 acknowledged
    h = history(rmw(1, 0, 1, 0, 0), rmw(1, 1, 2, 0, 1), rmw(1, 2, 3, 0, 2),
                rmw(1, 3, 4, 0, 3), rmw(2, 3.1, 4.1, 0, 3))
    r = txn_state.check_lost_updates(h, rmw_ctx({0: 4}))
    s = r.metrics["subjects"]["c"]
    assert (r.valid, s["count"], s["same_read"], s["ratio"]) == (False, 1, 1, 0.2)
    pair = s["examples"][0]
    assert [t["process"] for t in pair] == [1, 2]
    assert [t["value"] for t in pair] == [[3, 4], [3, 4]]


def test_unknown_outcomes_make_the_count_a_bound() -> None:
    # 3 acknowledged, 1 unknown, final 3: lost between 0 (the unknown failed) and 1
    h = history(rmw(1, 0, 1, 0, 0), rmw(1, 1, 2, 0, 1), rmw(1, 2, 3, 0, 2),
                rmw(2, 2.5, 3.5, 0, 0, type="info"))
    r = txn_state.check_lost_updates(h, rmw_ctx({0: 3}))
    s = r.metrics["subjects"]["c"]
    assert (r.valid, s["count"], s["at_least"], s["at_most"]) == (None, None, 0, 1)
    got = measure(Metric(name="lost_updates", subject="c"), Quantity(value=0, kind="count",
                  text="0"), {"lost_updates": r}, rmw_ctx({0: 3}))
    assert got == Measured(0.0, "count", "count", True, "1 increments of unknown outcome", 1.0)


def test_no_final_state_is_unknown_never_zero() -> None:
    h = history(rmw(1, 0, 1, 0, 0))
    r = txn_state.check_lost_updates(h, rmw_ctx(None))
    assert r.valid is None and r.metrics["subjects"]["c"]["count"] is None
    try:
        measure(Metric(name="lost_updates", subject="c"), Quantity(value=0, kind="count",
                text="0"), {"lost_updates": r}, rmw_ctx(None))
    except Unmeasurable as e:
        assert "cannot be counted" in str(e)
    else:
        raise AssertionError("an unread final state gave a figure")


def test_growth_beyond_every_attempt_is_a_phantom() -> None:
    h = history(rmw(1, 0, 1, 0, 0))
    r = txn_state.check_lost_updates(h, rmw_ctx({0: 3}))
    assert (r.valid, r.metrics["subjects"]["c"]["phantom"]) == (False, 2)


def bank_ctx(final: dict[int, int] | None) -> CheckContext:
    return CheckContext(
        workloads={"b": WorkloadInfo("bank", ("db1",), (), 3)},
        load_start=ns(0), load_end=ns(10),
        final_state={} if final is None else {"b": {"db1": final}},
        facts={"authority": "db1"})


def read(process: int, t0: float, t1: float, balances: list[int]) -> list[Op]:
    return op(process, "balances", t0, t1, workload="b",
              value=[[k, v] for k, v in enumerate(balances)])


def test_bank_totals_hold_and_break() -> None:
    good = history(read(1, 0, 1, [100, 100, 100]), read(1, 1, 2, [95, 105, 100]))
    r = txn_state.check_bank(good, bank_ctx({0: 95, 1: 105, 2: 100}))
    assert (r.valid, r.metrics["subjects"]["b"]["count"]) == (True, 0)
    bad = history(read(1, 0, 1, [100, 100, 100]), read(2, 1, 2, [95, 100, 100]),
                  read(1, 2, 3, [-5, 205, 100]))
    r = txn_state.check_bank(bad, bank_ctx({0: 95, 1: 110, 2: 100}))
    s = r.metrics["subjects"]["b"]
    assert (r.valid, s["count"], s["negative"], s["created"]) == (False, 1, 1, 5)
    assert [e["process"] for e in s["examples"]] == [2, 1]
    assert s["examples"][0]["total"] == 295


def test_wrong_totals_reader() -> None:
    bad = history(read(2, 1, 2, [95, 100, 100]))
    r: CheckResult = txn_state.check_bank(bad, bank_ctx({0: 100, 1: 100, 2: 100}))
    got = measure(Metric(name="wrong_totals", subject="b"), Quantity(value=0, kind="count",
                  text="0"), {"bank": r}, bank_ctx(None))
    assert got.value == 1.0
    got = measure(Metric(name="wrong_totals", subject="b", stat="created"),
                  Quantity(value=0, kind="count", text="0"), {"bank": r}, bank_ctx(None))
    assert got.value == 0.0


def test_the_findings_show_the_transactions_of_each_finding() -> None:
    """``lab run`` and ``lab show`` print each transactional finding with the transactions that
    show it (summary_matrix.findings_lines)."""
    from lab.report.summary_matrix import findings_lines

    h = history(rmw(1, 0, 1, 0, 0), rmw(2, 0.1, 1.1, 0, 0))
    lu = txn_state.check_lost_updates(h, rmw_ctx({0: 1}))
    bad = history(read(2, 1, 2, [95, 100, 100]))
    bank = txn_state.check_bank(bad, bank_ctx({0: 100, 1: 100, 2: 100}))
    cell = {"measurements": {"lost_updates": lu.metrics, "bank": bank.metrics}}
    lines = findings_lines(cell)
    assert lines[0] == "c: 1 of 2 acknowledged increments lost (counters grew by 1)"
    assert "process 1 on None" not in lines[1] and "read [0, 1]" in lines[1]
    assert lines[2].startswith("b: 1 of 1 reads saw a total other than 300")
    assert "(total 295)" in lines[3]


def test_a_failing_cell_s_text_names_the_transactions(tmp_path: Any) -> None:
    """A pytest failure (``cell_failure_text``) shows the lost update with its transactions."""
    from dsl.api import load_plan
    from lab.pytest.cell_failure import cell_failure_text
    from lab.run.outcome import CellOutcome

    path = tmp_path / "lu.exp"
    path.write_text('experiment "lu" {\n  duration 5s\n  topology single { node db1 }\n'
                    "  workload c: read_modify_write { target db1  clients 2  keys 1 }\n"
                    "  expect lost_updates(c) == 0\n}\n")
    plan = load_plan(str(path))
    h = history(rmw(1, 0, 1, 0, 0), rmw(2, 0.1, 1.1, 0, 0))
    out = CellOutcome(plan.cells[0], status="failed",
                      results={"lost_updates": txn_state.check_lost_updates(h, rmw_ctx({0: 1}))})
    text = cell_failure_text(plan, out, str(path))
    assert "c: 1 of 2 acknowledged increments lost" in text
    assert "two increments read the same value: process 1 on ? at 0.0 s read [0, 1]; " \
           "process 2" in text


def la_ctx(final: dict[int, list[int]] | None) -> CheckContext:
    return CheckContext(
        workloads={"la": WorkloadInfo("list_append", ("g1",), (), 4)},
        load_start=ns(0), load_end=ns(10),
        final_state={} if final is None else {"la": {"g1": final}},
        facts={"authority": "g1"})


def txn(process: int, t0: float, t1: float, mops: list[list[Any]], type: str = "ok") -> list[Op]:
    return op(process, "txn", t0, t1, type, workload="la", value=mops)  # type: ignore[arg-type]


def test_lost_appends_are_acknowledged_appends_missing_at_the_end() -> None:
    h = history(txn(1, 0, 1, [["append", 1, 1], ["append", 2, 2]]),
                txn(2, 1, 2, [["r", 1, [1]], ["append", 1, 3]]),
                txn(3, 2, 3, [["append", 2, 4]], type="info"),
                txn(4, 3, 4, [["append", 2, 5]], type="fail"))
    r = txn_state.check_lost_appends(h, la_ctx({1: [1], 2: [2, 4, 5]}))
    s = r.metrics["subjects"]["la"]
    assert (r.valid, s["count"], s["acknowledged"], s["unknown"], s["unknown_applied"],
            s["failed_but_present"]) == (False, 1, 3, 1, 1, 1)
    assert s["examples"][0]["process"] == 2 and s["examples"][0]["appended"] == 3
    got = measure(Metric(name="lost_writes", subject="la"), Quantity(value=0, kind="count",
                  text="0"), {"lost_appends": r}, la_ctx(None))
    assert got.value == 1.0
    none = txn_state.check_lost_appends(h, la_ctx(None))
    assert none.valid is None and none.metrics["subjects"]["la"]["count"] is None
