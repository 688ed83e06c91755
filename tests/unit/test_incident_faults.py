"""CPU/memory limits (cgroups on a fake tree), clock skew (the offset file) and `when`
triggers: syntax, validation, plan, and the pure parts of the runtime."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from fault_exp import HEAD, errors, exp

from dsl.actions import describe, needs_root, undo
from dsl.api import load_plan, parse_text
from dsl.models import ClockSkew, CpuLimit, MemoryLimit, NodeRef, StateCondition, Trigger
from dsl.plan import PlannedWorkload
from lab.run.triggers import TriggerWatch, did_not_happen, holds, latest_lag, row_tables
from runners import cgroups, faketime
from runners.ops import Op, Sample
from runners.tables import rows_statement

# --- syntax ---------------------------------------------------------------------------------

def test_cpu_memory_and_clock_actions_parse_to_their_models() -> None:
    e = parse_text(exp("at 2s cpu limit db1 to 20% for 5s\nat 3s memory limit db2 to 200M\n"
                       "at 4s clock skew db2 by +30s\nat 5s clock skew db2 by -1m\n"
                       "at 6s clock heal db2\nat 7s cpu heal db1\nat 8s memory heal db2"))
    acts = [t.action for t in e.timeline]
    assert acts[0] == CpuLimit(verb="limit", node=acts[0].node, share=0.2, span=acts[0].span)
    assert e.timeline[0].lasts == 5.0
    assert isinstance(acts[1], MemoryLimit) and acts[1].limit == 200 * 1024**2
    assert isinstance(acts[2], ClockSkew) and acts[2].offset == 30.0
    assert isinstance(acts[3], ClockSkew) and acts[3].offset == -60.0
    assert [describe(a) for a in acts] == [
        "cpu limit db1 to 20%", "memory limit db2 to 200M", "clock skew db2 by +30s",
        "clock skew db2 by -1m", "clock heal db2", "cpu heal db1", "memory heal db2"]


def test_a_clock_skew_without_a_sign_is_ahead() -> None:
    """``by 30s`` is ``by +30s`` (the grammar's sign is optional; it crashed the builder with a
    traceback before, on both parser paths)."""
    e = parse_text(exp("at 4s clock skew db2 by 30s\nat 5s clock skew db2 by -2s"))
    acts = [t.action for t in e.timeline]
    assert isinstance(acts[0], ClockSkew) and acts[0].offset == 30.0
    assert isinstance(acts[1], ClockSkew) and acts[1].offset == -2.0
    assert describe(acts[0]) == "clock skew db2 by +30s"


def test_each_limit_is_undone_by_its_heal_and_cgroups_need_root() -> None:
    ref = NodeRef(name="db1")
    assert undo(CpuLimit(verb="limit", node=ref, share=0.5)) == CpuLimit(verb="heal", node=ref)
    assert undo(MemoryLimit(verb="limit", node=ref, limit=1 << 30)) == MemoryLimit(
        verb="heal", node=ref)
    assert undo(ClockSkew(verb="skew", node=ref, offset=3)) == ClockSkew(verb="heal", node=ref)
    assert undo(CpuLimit(verb="heal", node=ref)) is None
    assert "cgroup" in (needs_root(CpuLimit(verb="limit", node=ref, share=0.5), "single") or "")
    assert needs_root(ClockSkew(verb="skew", node=ref, offset=3), "single") is None


def test_a_when_trigger_parses_with_its_condition_lasting_and_limit() -> None:
    e = parse_text(exp("when replication_lag(db2) > 5s kill db1 for 2s within 20s\n"
                       "when rows(db1) >= 10000 clock skew db2 by +3s"))
    first, second = e.triggers
    assert isinstance(first, Trigger)
    assert first.condition.metric == "replication_lag" and first.condition.value == 5.0
    assert first.condition.op == ">" and first.condition.node.name == "db2"
    assert first.lasts == 2.0 and first.within == 20.0 and describe(first.action) == "kill db1"
    assert second.condition.metric == "rows" and second.condition.value == 10000
    assert second.within is None


def test_the_plan_carries_triggers_and_their_actions() -> None:
    path = Path(__file__).parents[2] / "experiments" / "state-triggers.exp"
    plan = load_plan(str(path))
    assert len(plan.triggers) == 2
    assert [describe(a) for a in plan.actions()][-2:] == ["kill db1", "cpu limit db2 to 20%"]


# --- validation -----------------------------------------------------------------------------

@pytest.mark.parametrize(("body", "wanted"), [
    ("when replication_lag(db1) > 5s kill db2", "measures lag on the replicas"),
    ("when replication_lag(db2) > 5s wait 2s", "does nothing a 'when' could fire"),
    ("when replication_lag(db2) > 5s kill db1 within 40s", "after the end of the load"),
    ("when replication_lag(db9) > 5s kill db1", "unknown node 'db9'"),
    ("at 2s memory limit db1 to 1M", "below 16M"),
    ("at 2s cpu limit db1 to 7000%", "more than 6400%"),
    ("at 2s cpu limit db3 to 20%", "unknown node 'db3'"),
])
def test_impossible_things_are_errors(body: str, wanted: str) -> None:
    found = errors(exp(body))
    assert any(wanted in m for m in found), found


def test_a_wrong_unit_in_a_condition_is_an_error() -> None:
    assert errors(exp("when replication_lag(db2) > 5M kill db1"))
    assert errors(exp("at 2s cpu limit db1 to 200M"))
    assert errors(exp("at 2s memory limit db1 to 20%"))


def test_rows_needs_a_workload_with_a_table() -> None:
    text = HEAD.replace("unique_writes { target db1  rate 100/s }", "connect { target db1 }")
    found = errors(text + "when rows(db1) >= 10 kill db2\n}\n")
    assert any("no workload here has a table" in m for m in found), found


# --- cgroups on a fake tree -----------------------------------------------------------------

def fake_tree(tmp_path: Path, pid: int = 4242, origin: str = "/machine") -> tuple[Path, Path]:
    root, proc = tmp_path / "cgroup", tmp_path / "proc"
    for c in ("cpu", "memory"):
        (root / c).mkdir(parents=True)
        (root / c / "cgroup.procs").write_text("1\n")
        (root / c / origin.lstrip("/")).mkdir()
        (root / c / origin.lstrip("/") / "cgroup.procs").write_text("")
    (proc / str(pid)).mkdir(parents=True)
    (proc / str(pid) / "cgroup").write_text(
        f"5:cpu,cpuacct:{origin}\n4:memory:{origin}\n0::/\n")
    return root, proc


@pytest.fixture
def fake_rmdir(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    monkeypatch.setattr(cgroups, "_rmdir", shutil.rmtree)


def test_a_cpu_limit_moves_the_server_in_and_writes_the_quota(tmp_path: Path,
                                                               fake_rmdir: None) -> None:
    root, proc = fake_tree(tmp_path)
    g = cgroups.NodeGroup.make("cpu", "abc123", "db1", 4242, root, proc)
    assert g.path == root / "cpu" / "rcl-abc123-db1"
    assert (g.path / "cgroup.procs").read_text() == "4242"
    assert g.origin == root / "cpu" / "machine"
    assert g.set_cpu(0.2) == 20_000
    assert (g.path / "cpu.cfs_quota_us").read_text() == "20000"
    assert (g.path / "cpu.cfs_period_us").read_text() == "100000"
    assert g.release() == [4242]
    assert (root / "cpu" / "machine" / "cgroup.procs").read_text() == "4242"
    assert not g.path.exists()


def test_a_cpu_reading_is_the_servers_cpu_time_and_the_groups_throttling(
        tmp_path: Path, fake_rmdir: None) -> None:
    root, proc = fake_tree(tmp_path)
    g = cgroups.NodeGroup.make("cpu", "abc123", "db1", 4242, root, proc)
    (g.path / "cpu.stat").write_text("nr_periods 50\nnr_throttled 10\nthrottled_time 900000000\n")
    tick = os.sysconf("SC_CLK_TCK")
    # comm with a space and a parenthesis: the fields are counted after the last ")"
    (proc / "4242" / "stat").write_text(
        f"4242 (my (d) b) S 1 1 1 0 -1 0 0 0 0 0 {2 * tick} {tick} 0 0 20 0 30 0\n")
    assert cgroups.process_cpu_seconds(4242, proc) == 3.0
    assert cgroups.process_cpu_seconds(999, proc) is None  # gone
    before = cgroups.cpu_use(g.path, 3.0)
    assert before == cgroups.CpuUse(3.0, 10, 0.9)
    (g.path / "cpu.stat").write_text("nr_periods 80\nnr_throttled 35\nthrottled_time 3400000000\n")
    after = cgroups.cpu_use(g.path, 3.25)
    assert after.since(before) == {"cpu_seconds": 0.25, "throttled_periods": 25,
                                   "throttled_seconds": 2.5}
    # a restarted server (its CPU time went back) or an unreadable group: unknown, never 0
    assert cgroups.CpuUse(1.0, None, None).since(before) == {
        "cpu_seconds": None, "throttled_periods": None, "throttled_seconds": None}


def test_quota_is_a_share_of_the_period_with_the_kernels_floor() -> None:
    assert cgroups.cpu_quota_us(1.5) == 150_000
    assert cgroups.cpu_quota_us(0.001) == cgroups.MIN_QUOTA_US


def test_a_memory_limit_writes_limit_and_swap_and_counts_oom_kills(tmp_path: Path,
                                                                   fake_rmdir: None) -> None:
    root, proc = fake_tree(tmp_path)
    g = cgroups.NodeGroup.make("memory", "abc123", "db2", 4242, root, proc)
    (g.path / "memory.memsw.limit_in_bytes").write_text("max")
    (g.path / "memory.usage_in_bytes").write_text("1000\n")
    assert g.set_memory(200 << 20) == {"limit_bytes": 200 << 20, "usage_bytes": 1000}
    assert (g.path / "memory.memsw.limit_in_bytes").read_text() == str(200 << 20)
    assert g.oom_kills() == 0
    (g.path / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    assert g.oom_kills() == 2


def test_a_missing_controller_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(cgroups.CgroupError, match="not mounted"):
        cgroups.NodeGroup.make("cpu", "r", "db1", 1, tmp_path / "none", tmp_path)


def test_gc_removes_the_groups_of_one_run_and_nothing_else(tmp_path: Path,
                                                           fake_rmdir: None) -> None:
    root, _ = fake_tree(tmp_path)
    for name in ("rcl-abc-db1", "rcl-abc-2-db1", "rcl-abcd-db1", "other", "rcl-abc-db2"):
        (root / "memory" / name).mkdir()
    (root / "cpu" / "rcl-abc-db1").mkdir()
    (root / "cpu" / "rcl-abc-db1" / "cgroup.procs").write_text("77\n")
    removed = cgroups.remove_run_groups("abc", root)
    assert sorted(p.relative_to(root).as_posix() for p in removed) == [
        "cpu/rcl-abc-db1", "memory/rcl-abc-db1", "memory/rcl-abc-db2"]
    left = sorted(p.name for p in (root / "memory").iterdir() if p.is_dir())
    assert left == ["machine", "other", "rcl-abc-2-db1", "rcl-abcd-db1"]
    assert (root / "cpu" / "cgroup.procs").read_text() == "77"  # its task went to the root


# --- clock skew -----------------------------------------------------------------------------

def test_offsets_are_written_in_libfaketimes_relative_form(tmp_path: Path) -> None:
    assert faketime.offset_text(30) == "+30"
    assert faketime.offset_text(-2.5) == "-2.5"
    assert faketime.offset_text(0) == "+0"
    f = faketime.offset_file(tmp_path, "db2")
    assert faketime.write_offset(f, 30) == "+30" and f.read_text() == "+30\n"
    env = faketime.faketime_env("/lib/libfaketime.so.1", f)
    assert env["LD_PRELOAD"] == "/lib/libfaketime.so.1"
    assert env["FAKETIME_TIMESTAMP_FILE"] == str(f) and env["FAKETIME_NO_CACHE"] == "1"


def test_only_skewed_nodes_run_under_libfaketime() -> None:
    plan = load_plan(str(Path(__file__).parents[2] / "experiments" / "clock-skew.exp"))
    assert faketime.skew_nodes(plan.actions()) == ["db2"]


# --- triggers -------------------------------------------------------------------------------

def cond(metric: str = "rows", op: str = ">=", value: float = 10) -> StateCondition:
    return StateCondition.model_validate({"metric": metric, "node": {"name": "db1"}, "op": op,
                                          "value": value, "text": f"{metric}(db1) {op} {value}"})


def test_a_condition_holds_only_on_a_known_value() -> None:
    c = cond()
    assert holds(c, 10) and not holds(c, 9) and not holds(c, None)
    assert not holds(cond("replication_lag", ">", 5), float("nan"))


def test_the_lag_is_the_newest_fresh_sample_of_that_node() -> None:
    s = [Sample("lag", "db2", 1_000_000_000, {"lag": 1.0}),
         Sample("lag", "db3", 1_500_000_000, {"lag": 9.0}),
         Sample("lag", "db2", 2_000_000_000, {"lag": 6.0})]
    assert latest_lag(s, "db2", 2_100_000_000) == 6.0
    assert latest_lag(s, "db2", 4_000_000_000) is None  # stale: not the lag now
    assert latest_lag(s, "db4", 2_100_000_000) is None


def test_rows_counts_every_workload_table() -> None:
    ws = [PlannedWorkload(name="a", kind="unique_writes", targets=["db1"]),
          PlannedWorkload(name="c", kind="connect", targets=["db1"]),
          PlannedWorkload(name="b", kind="probe", targets=["db1"])]
    assert row_tables(ws) == ["a", "b"]  # lab.run.triggers: which tables; runners: the SQL
    assert rows_statement(row_tables(ws)) == ("SELECT (SELECT COUNT(*) FROM `lab`.`w_a`) + "
                                              "(SELECT COUNT(*) FROM `lab`.`w_b`)")
    assert rows_statement(row_tables(ws[1:2])) is None


def _watch(trig: Trigger, values: list[float | None]) -> tuple[TriggerWatch, list[Any],
                                                               list[Op], list[str]]:
    applied: list[Any] = []
    ops: list[Op] = []
    notes: list[str] = []
    seq = iter(values)
    watch = TriggerWatch(trig, lambda c: next(seq), lambda a, s: applied.append(a) or {},
                         lambda op: ops.append(op) or op, threading.Event(), notes)
    watch.t0 = __import__("time").monotonic()
    return watch, applied, ops, notes


def test_a_trigger_fires_once_its_state_holds_and_records_what_it_saw() -> None:
    e = parse_text(exp("when rows(db1) >= 10000 kill db2"))
    watch, applied, ops, notes = _watch(e.triggers[0], [None, 9999, 10001])
    assert watch.check() is None and watch.check() is None and not applied
    assert watch.check() is True
    assert [describe(a) for a in applied] == ["kill db2"]
    assert [(o.type, o.f, o.node) for o in ops] == [("invoke", "when", "db1"),
                                                   ("ok", "when", "db1")]
    assert ops[1].value["observed"] == 10001 and ops[1].value["condition"] == \
        "rows(db1) >= 10000" and ops[1].value["fires"] == "kill db2"
    assert not notes


def test_a_trigger_past_its_limit_does_not_fire_and_says_so() -> None:
    e = parse_text(exp("when rows(db1) >= 10000 kill db2 within 1s"))
    watch, applied, ops, notes = _watch(e.triggers[0], [10001])
    watch.t0 -= 2  # the limit has passed
    assert watch.check() is False
    assert not applied and not ops
    assert notes == [did_not_happen(e.triggers[0])]
    assert "did not happen within 1 s" in notes[0]
