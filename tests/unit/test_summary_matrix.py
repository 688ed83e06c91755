"""The compact end-of-run summary (lab.report.summary_matrix): one row per workload and per node,
the faults timeline above it, `lab show RUN` (the matrix) against `lab show RUN --all` (every
figure); the fault timeline in the summary (lab.run.summary.fault_timeline, Store)."""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from lab.cli import main
from lab.history import NEMESIS, FaultWindow, Op, fault_windows
from lab.judge.checkers import CheckResult
from lab.report.summary_matrix import (
    LEGEND_NODES,
    LEGEND_SYSBENCH,
    NA,
    UNKNOWN,
    build_matrix,
    lag_text,
    render_matrix_summary,
)
from lab.report.timeline import fault_at, fault_lines, fault_text
from lab.run.summary import fault_timeline
from lab.store.db import Store

S = 1_000_000_000


def _vis(p50: float, p99: float, res: float, unseen: int = 0,
         bound: float | None = None) -> dict[str, Any]:  # fmt: skip
    return {"count": 100 + unseen, "p50": p50, "p99": p99, "seen": 100, "unseen": unseen,
            "unseen_min_bound": bound, "resolution": res}  # fmt: skip


def _down(longest: float, open_: bool = False, count: int = 0) -> dict[str, Any]:
    return {"longest": longest, "longest_open_at_end": open_, "total": longest,
            "open_at_end": open_, "count": count, "stalls": 0}  # fmt: skip


def quickstart() -> dict[str, Any]:
    """Shaped like the summary of experiments/quickstart.exp: a probe through the router, a
    read_your_writes client reading db2 and db3, db2 killed and still down at the end."""
    cell = {
        "index": 1, "label": "#1", "variant": None, "sweep": {}, "repeat": 1,
        "status": "failed", "error": None, "notes": ["replication did not settle: db2 down"],
        "workloads": {"writes": "probe", "ryw": "read_your_writes"},
        "faults": [
            {"name": "kill", "node": "db2", "at": 10.022, "end": 10.031, "ok": True,
             "error": None, "detail": None},
            {"name": "wait_caught_up", "node": "db3", "at": 21.086, "end": 31.44, "ok": True,
             "error": None, "detail": None},
        ],
        "expectations": [{"text": "expect lost_writes == 0", "passed": True, "measured": 0.0,
                          "unit": "count", "metric": "lost_writes.count",
                          "lower_bound": False,
                          "explanation": "lost_writes.count = 0; expected == 0: holds"}],
        "reports": [],
        "measurements": {
            "downtime": {"longest": 4.2, "subjects": {
                "writes": _down(0.0), "writes on router.writer": _down(0.0),
                "ryw": _down(4.2, True, 1), "ryw on db2": _down(4.2, True, 1),
                "ryw on db3": _down(0.0)}},
            "stale_reads": {"subjects": {
                "ryw": {"count": 882, "eligible_reads": 1000, "rate": 0.882,
                        "visibility": _vis(0.0086, 10.6, 0.0072)},
                "ryw on db2": {"count": 500, "eligible_reads": 500, "rate": 1.0,
                               "visibility": _vis(4.41, 10.7, 0.0098, unseen=5, bound=4.0)},
                "ryw on db3": {"count": 382, "eligible_reads": 500, "rate": 0.764,
                               "visibility": _vis(0.0055, 0.0144, 0.005)},
                "writes": {"count": 0, "eligible_reads": 0, "rate": None}}},
            "lost_writes": {"count": 0, "unchecked_workloads": [], "subjects": {
                "writes": {"count": 0}, "ryw": {"count": 0, "unchecked": 3},
                "writes on db1": {"count": 0, "authoritative": True},
                "ryw on db1": {"count": 0, "authoritative": True},
                "ryw on db2": {"count": 2}, "ryw on db3": {"count": 0}}},
            "errors": {"subjects": {
                "writes": {"total": 0, "ops": 3000}, "ryw": {"total": 1439, "ops": 11042},
                "writes on db1": {"total": 0, "ops": 3000},
                "ryw on db1": {"total": 0, "ops": 3290},
                "ryw on db2": {"total": 1439, "ops": 3889},
                "ryw on db3": {"total": 0, "ops": 3862}}},
            "throughput": {"subjects": {
                "writes": {"mean": 98.9, "source": "ops"}, "ryw": {"mean": 3054.5, "source": "ops"},
                "ryw on db2": {"mean": 779.5}, "ryw on db3": {"mean": 1228.4},
                "writes on db1": {"mean": 98.9}, "ryw on db1": {"mean": 1046.6}}},
            "latency": {"subjects": {
                "writes": {"p50": 0.0012, "p99": 0.0043, "source": "ops"},
                "ryw": {"p50": 0.00052, "p99": 0.0023, "source": "ops"},
                "writes on db1": {"p50": 0.0012, "p99": 0.0043},
                "ryw on db1": {"p50": 0.00098, "p99": 0.0030},
                "ryw on db2": {"p50": 0.00034, "p99": 0.0016},
                "ryw on db3": {"p50": 0.00034, "p99": 0.0015}}},
            "replication_lag": {"max": 10.8, "subjects": {
                "db2": {"max": 10.8, "samples": 200, "unreadable": 0},
                "db3": {"max": None, "samples": 0, "unreadable": 50}}},
        },
    }  # fmt: skip
    return {"run_id": "7b0f583d6a55", "experiment": "quickstart", "status": "failed",
            "exit_code": 1, "message": None, "topology": "replication", "cells": [cell]}


def test_workload_rows_show_downtime_stale_reads_and_the_rest() -> None:
    m = build_matrix(quickstart())
    assert [(r.kind, r.name) for r in m.rows] == [
        ("workload", "writes"), ("workload", "ryw"),
        ("node", "db1"), ("node", "db2"), ("node", "db3")]  # router.writer is no node
    ryw = m.row("ryw")
    assert ryw.text("downtime") == "≥ 4.20 s (still down at end)"
    assert ryw.text("stale reads") == "88.2%"
    assert ryw.text("visible p50 / p99") == "8.6 ms / 10.6 s ± 7.2 ms"
    assert ryw.text("lost writes") == "0 (+ 3 unchecked)"
    assert ryw.text("errors") == "1,439 (13.0%)"
    assert ryw.text("throughput") == "3,054/s"
    assert ryw.text("latency p50 / p99") == "0.52 ms / 2.3 ms"
    assert ryw.text("lag max") == NA
    writes = m.row("writes")
    assert writes.text("downtime") == "0 s" and writes.text("errors") == "0"
    assert writes.text("stale reads") == NA  # a probe reads nothing back


def test_node_rows_show_lag_and_what_the_workloads_saw_there() -> None:
    m = build_matrix(quickstart())
    db2 = m.row("db2")
    assert db2.text("lag max") == "10.8 s"
    assert db2.text("downtime") == "≥ 4.20 s (still down at end)"
    assert db2.text("stale reads") == "100.0%"
    assert db2.text("visible p50 / p99") == "≥ 4.41 s / ≥ 10.7 s ± 9.8 ms (5 never seen)"
    assert db2.text("lost writes") == "2"  # acknowledged writes missing there
    assert db2.text("errors") == "1,439 (37.0%)"
    db1 = m.row("db1")
    assert db1.text("lost writes") == "0 (authority)"
    assert db1.text("lag max") == NA and db1.text("downtime") == NA  # clients used the router
    assert db1.text("throughput") == "1,146/s"  # both workloads' operations answered by db1
    assert db1.text("latency p50 / p99") == "1.2 ms / 4.3 ms"  # the worst workload there


def test_a_figure_that_cannot_be_known_is_unknown() -> None:
    s = quickstart()
    m = build_matrix(s)
    assert m.row("db3").text("lag max") == "unknown (50 of 50 samples unreadable)"
    del s["cells"][0]["measurements"]["lost_writes"]  # the checker did not run
    m = build_matrix(s)
    assert m.row("writes").text("lost writes") == UNKNOWN
    assert m.row("ryw").text("lost writes") == UNKNOWN
    s = quickstart()
    del s["cells"][0]["measurements"]["latency"]["subjects"]["ryw"]
    s["cells"][0]["measurements"]["lost_writes"]["unchecked_workloads"] = ["writes"]
    del s["cells"][0]["measurements"]["lost_writes"]["subjects"]["writes"]
    m = build_matrix(s)
    assert m.row("ryw").text("latency p50 / p99") == UNKNOWN
    assert m.row("writes").text("lost writes") == "unknown (no final state)"


def test_a_probe_that_only_reads_has_no_lost_writes_to_show() -> None:
    s = quickstart()
    c = s["cells"][0]
    c["workloads"]["r"] = "probe"
    c["read_only_workloads"] = ["r"]
    c["measurements"]["downtime"]["subjects"]["r"] = _down(1.0, count=1)
    assert build_matrix(s).row("r").text("lost writes") == NA  # was "unknown"
    del c["read_only_workloads"]  # an older summary: a probe writes
    assert build_matrix(s).row("r").text("lost writes") == UNKNOWN


def test_columns_no_row_has_are_left_out_and_sysbench_latency_is_marked() -> None:
    s = quickstart()
    c = s["cells"][0]
    c["workloads"] = {"sb": "sysbench"}
    c["measurements"] = {
        "throughput": {"subjects": {"sb": {"mean": 812.0, "source": "sysbench"}}},
        "latency": {"subjects": {"sb": {"p50": 0.004, "p99": 0.009,
                                        "source": "sysbench per-second p95"}}},
        "errors": {"subjects": {"sb": {"total": 0, "ops": 48000}}},
        "downtime": {"subjects": {"sb": _down(0.0)}},
    }  # fmt: skip
    m = build_matrix(s)
    assert m.columns == ["downtime", "errors", "throughput", "latency p50 / p99"]
    assert m.row("sb").text("latency p50 / p99") == "4.0 ms / 9.0 ms †"
    assert LEGEND_SYSBENCH in m.legend


def test_several_cells_sit_next_to_each_other_row_by_row() -> None:
    s = quickstart()
    b = copy.deepcopy(s["cells"][0])
    b.update(index=2, label="b #1")
    b["measurements"]["throughput"]["subjects"]["writes"]["mean"] = 50.0
    s["cells"][0]["label"] = "a #1"
    s["cells"].append(b)
    m = build_matrix(s)
    assert [(r.name, r.cell) for r in m.rows][:4] == [("writes", 0), ("writes", 1),
                                                      ("ryw", 0), ("ryw", 1)]
    assert m.row("writes", 1).text("throughput") == "50.0/s"
    for width in (80, 120):
        text = render(s, width)
        assert all(len(line) <= width for line in text.splitlines()), width
        assert "a #1" in text and "b #1" in text


def render(summary: dict[str, Any], width: int = 120) -> str:
    console = Console(record=True, width=width, color_system=None, file=io.StringIO())
    render_matrix_summary(summary, console)
    return console.export_text()


def test_the_summary_shows_faults_above_the_matrix_and_notes_under_it() -> None:
    text = render(quickstart())
    assert text.index("quickstart — run 7b0f583d6a55 — failed") < text.index("faults")
    assert text.index("10.0 s  kill db2") < text.index("downtime")
    assert "21.1 s  wait until db3 caught_up (took 10.4 s)" in text
    assert text.index("lost writes") < text.index("expect lost_writes == 0")
    assert text.rindex("replication did not settle") > text.index("expect lost_writes == 0")
    assert "measurements" not in text  # the full list is `lab show RUN --all`
    wide = render(quickstart(), width=300)
    header = next(line for line in wide.splitlines() if "downtime" in line)
    assert "latency p50 / p99" in header  # one table when the terminal is wide enough
    narrow = render(quickstart(), width=100)
    header = next(line for line in narrow.splitlines() if "downtime" in line)
    assert "latency" not in header  # too wide: two tables


def test_fault_texts() -> None:
    assert fault_text({"name": "kill", "node": "db2", "at": 10.0, "end": 10.01, "ok": True}) \
        == "kill db2"
    assert fault_text({"name": "start", "node": "db2", "at": 20.0, "end": 21.04, "ok": True}) \
        == "start db2 (took 1.04 s)"
    assert fault_text({"name": "partition", "node": None, "at": 5.0, "end": None,
                       "ok": None}) == "network partition (still active at the end)"
    assert fault_text({"name": "kill", "node": "db9", "at": 5.0, "end": 5.1, "ok": False,
                       "error": "no such node"}) == "kill db9 (failed: no such node)"
    assert fault_text({"name": "set_global", "node": None, "at": 10.0, "end": 10.01, "ok": True,
                       "detail": {"nodes": ["db1", "db2"], "statement":
                                  "SET GLOBAL innodb_flush_log_at_trx_commit = 0"}}) \
        == "set global innodb_flush_log_at_trx_commit = 0 on db1, db2"
    # what an execute did
    assert fault_text({"name": "sql", "node": "db1", "at": 2.0, "end": 2.01, "ok": True,
                       "detail": {"statement": "DELETE FROM t", "node": "db1",
                                  "affected_rows": 1204}}) \
        == "execute on db1 (1,204 rows changed)"
    assert fault_text({"name": "sql", "node": "db1", "at": 2.0, "end": 2.01, "ok": True,
                       "detail": {"statement": "SELECT 1", "row_count": 1, "rows": [["1"]],
                                  "affected_rows": None}}) \
        == "execute on db1 (1 rows returned)"


def healed(before: int, settled: int) -> dict[str, Any]:
    """The relay-log lesson's shape: r1 missing ``before`` transactions as the timeline left
    it, ``settled`` after the heal at the end (which restarted the primary m)."""
    s = quickstart()
    cell = s["cells"][0]
    cell["measurements"]["facts"] = {"missing_before_heal": {"r1": before, "m": 0},
                                     "subjects": {"r1": {"missing_transactions": settled},
                                                  "m": {"missing_transactions": 0}}}
    cell["healed"] = ["start m", "rejoin m as a replica"]
    cell["heal"] = {"at": 30.214, "end": 31.514}
    return s


def test_a_heal_that_changed_the_answer_shows_both_figures_and_itself() -> None:
    text = render(healed(5000, 0), width=200)
    assert "missing transactions: r1 5,000 before the heal, 0 settled (the heal changed it)" \
        in text
    assert "30.2 s  heal at the end: start m; rejoin m as a replica (took 1.30 s)" in text
    assert text.index("heal at the end") < text.index("downtime")  # in the timeline


def test_the_relay_log_lessons_before_heal_figure_is_printed() -> None:
    """`stop m for good`: the heal changes nothing, and `lab show` prints the figure the
    lesson's expectation is on."""
    s = healed(5000, 5000)
    s["cells"][0]["healed"] = []
    text = render(s, width=200)
    assert "missing transactions: r1 5,000 before the heal, 5,000 settled" in text
    assert "heal at the end" not in text and "the heal changed it" not in text
    s["topology"] = "galera"
    assert "missing transactions" not in render(s, width=200)


def test_lag_of_a_replica_that_answered_without_a_heartbeat() -> None:
    assert lag_text({"max": None, "samples": 0, "unreadable": 0, "no_heartbeat": 40}, None) \
        == "unknown (up, but the primary's heartbeat never reached it)"
    assert lag_text({"max": None, "samples": 0, "unreadable": 3}, None) \
        == "unknown (3 of 3 samples unreadable)"


def test_the_footnote_is_a_whole_sentence() -> None:
    assert not LEGEND_NODES.endswith("the node's own")
    assert LEGEND_NODES.endswith(")")


def test_the_timeline_speaks_the_language_not_the_history() -> None:
    """Internal names (wait_downloaded, sleep, wait_synced, stop_replication) were shown as
    they are in the history; an action of a `before load` step was at "−1.0 ms"."""
    def line(name: str, node: str | None, at: float = 3.0, end: float = 3.01) -> str:
        f = {"name": name, "node": node, "at": at, "end": end, "ok": True}
        return dict(fault_lines({"faults": [f]}))[fault_at(at)]

    assert line("wait_downloaded", "r1") == "wait until r1 downloaded"
    assert line("wait_synced", "g2", end=4.5) == "wait until g2 synced (took 1.50 s)"
    assert line("sleep", None, end=4.0) == "wait (took 1.00 s)"
    assert line("stop_replication", "r1") == "stop replication r1"
    assert line("start_replication", "r1") == "start replication r1"
    assert line("drop_caches", None) == "drop caches"
    assert line("drop_caches", "db1") == "drop caches on db1"
    assert line("disk_full", "db1") == "disk full db1"
    assert line("kill_nodes", None) == "kill"
    assert line("link_down", "db2") == "network link_down db2"
    assert fault_lines({"faults": [{"name": "stop_replication", "node": "r1", "at": -0.001,
                                    "end": 0.0, "ok": True}]}) \
        == [("before load", "stop replication r1")]


# --- the fault timeline in the summary --------------------------------------------------------


def test_fault_timeline_from_the_history() -> None:
    t0 = 100 * S
    history = [
        Op("invoke", "kill", NEMESIS, t0 + 10 * S, "", None, "db2", None, {"signal": 9},
           index=0),
        Op("ok", "kill", NEMESIS, t0 + 10 * S + 9_000_000, "", None, "db2", None, None,
           index=1),
        Op("invoke", "partition", NEMESIS, t0 + 12 * S, "", None, None, None, None, index=2),
    ]  # fmt: skip
    got = fault_timeline(fault_windows(history), t0)
    assert got == [
        {"name": "kill", "node": "db2", "at": 10.0, "end": 10.009, "ok": True, "error": None,
         "detail": {"signal": 9}},
        {"name": "partition", "node": None, "at": 12.0, "end": None, "ok": None, "error": None,
         "detail": None},
    ]  # fmt: skip


def stored_run(db: Path, with_summary: bool) -> str:
    with Store(db) as s:
        rid = s.create_run("quickstart", "experiments/quickstart.exp")
        s.create_cell(rid, 1, "#1")
        s.write_faults(rid, 1, [FaultWindow("kill", "db2", 15 * S, 15 * S + 5_000_000, True)])
        s.write_measurements(rid, 1, {
            "downtime": CheckResult("downtime", True, {"longest": 1.5, "subjects": {
                "writes": _down(1.5, count=1)}}),
            "throughput": CheckResult("throughput", True, {"subjects": {
                "writes": {"mean": 99.0}}}),
        })  # fmt: skip
        s.finish_cell(rid, 1, "passed", load_start_ns=5 * S, load_end_ns=40 * S)
        summary = None
        if with_summary:  # as stored by a lab before the summary carried the faults
            summary = {"run_id": rid, "experiment": "quickstart", "status": "passed",
                       "cells": [{"index": 1, "label": "#1", "measurements": {}}]}
        s.finish_run(rid, "passed", 0, summary=summary)
    return rid


@pytest.mark.parametrize("with_summary", [True, False])
def test_store_summary_carries_the_faults_relative_to_the_load(tmp_path: Path,
                                                               with_summary: bool) -> None:
    rid = stored_run(tmp_path / "r.db", with_summary)
    with Store(tmp_path / "r.db") as s:
        (cell,) = s.summary(rid)["cells"]
    assert cell["faults"] == [{"name": "kill", "node": "db2", "at": 10.0, "end": 10.005,
                               "ok": True, "error": None, "detail": None}]  # fmt: skip


def test_lab_show_prints_the_matrix_and_show_all_every_figure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    db = tmp_path / "r.db"
    rid = stored_run(db, with_summary=False)
    assert main(["show", rid[:6], "--db", str(db)]) == 0
    compact = capsys.readouterr().out
    assert "10.0 s  kill db2" in compact
    line = next(ln for ln in compact.splitlines() if ln.strip().startswith("writes"))
    assert "1.50 s" in line and "99.0/s" in line  # one row: downtime, throughput
    assert "downtime(writes).longest" not in compact
    assert main(["show", rid[:6], "--db", str(db), "--all"]) == 0
    full = capsys.readouterr().out
    assert "measurements" in full and "downtime(writes).longest" in full
    assert "throughput(writes).mean" in full


def test_the_engine_puts_the_cell_faults_in_the_summary(tmp_path: Path) -> None:
    from dsl.api import load_plan
    from lab.run import engine
    from lab.run.outcome import RunOutcome, View
    from lab.run.recorder import Recorder
    from lab.run.summary import summary

    plan = load_plan(str(Path(__file__).resolve().parents[2] / "experiments/quickstart.exp"))
    with Store(tmp_path / "r.db") as store:
        rid = store.create_run(plan.name)
        runner = engine.CellRunner(plan, plan.cells[0], store, rid, View())
        runner.recorder = Recorder(None)
        inv = runner.recorder.invoke("write", 1, workload="writes", endpoint="db1", key=1,
                                     value=1)  # fmt: skip
        runner.recorder.complete(inv, "ok", node="db1")
        kill = runner.recorder.fault_start("kill", "db2")
        runner.recorder.fault_end(kill)
        runner._check()
    (f,) = runner.out.faults
    assert (f["name"], f["node"], f["ok"]) == ("kill", "db2", True)
    assert 0 <= f["at"] < 5 and f["end"] >= f["at"]  # since the first operation: no load start
    doc = summary(RunOutcome(rid, plan, [runner.out]))
    assert doc["cells"][0]["faults"] == runner.out.faults


def test_a_visibility_figure_with_writes_never_seen_shows_what_is_known() -> None:
    """Between its two ends when it has both, one figure when they show the same, ``≥`` when
    its rank falls among the unseen writes (no upper end)."""
    from lab.report.rows import visibility_value

    vis = {"p50": 0.506, "p90": 0.52, "p99": 0.9, "unseen": 9, "unseen_min_bound": 0.001,
           "upper": {"p50": 0.5061, "p90": 0.61, "p99": None}}
    assert visibility_value(vis, "p50", 0.506) == "506 ms"  # 9 of 400 unseen cannot move it
    assert visibility_value(vis, "p90", 0.52) == "520 ms to 610 ms"
    assert visibility_value(vis, "p99", 0.9) == "≥ 900 ms"
    assert visibility_value({"p50": 0.2, "unseen": 0}, "p50", 0.2) == "200 ms"


# --- 80 columns, piped; the run's identity (issue 24) ---------------------------------------------


def two_cells() -> dict[str, Any]:
    s = quickstart()
    b = copy.deepcopy(s["cells"][0])
    b.update(index=2, label="semi_sync threads=16 #2")
    s["cells"][0]["label"] = "async threads=16 #1"
    s["cells"].append(b)
    return s


@pytest.mark.parametrize("width", [80, 100])
def test_at_80_columns_and_piped_no_figure_is_broken(width: int) -> None:
    """Every figure of the matrix keeps its number, unit and sign on one line (rich wrapped
    ``1.2 ms / 4.3 ms`` as ``… 4.3`` over ``ms``), and no line is wider than the terminal."""
    from lab.report.term_fit import atoms

    for s in (quickstart(), two_cells()):
        text = render(s, width)
        lines = text.splitlines()
        assert all(len(x) <= width for x in lines), width
        for r in build_matrix(s).rows:
            for v in r.values.values():
                for a in atoms(v):
                    assert any(a in x for x in lines), (width, r.name, v, a)


def test_a_matrix_no_table_can_hold_is_printed_in_blocks() -> None:
    from lab.report.term_fit import atoms

    text = render(two_cells(), 40)
    assert all(len(x) <= 40 or " " not in x.strip() for x in text.splitlines())
    assert "ryw (async threads=16 #1)" in text
    for a in atoms("≥ 4.41 s / ≥ 10.7 s ± 9.8 ms (5 never seen)"):
        assert a in text


def test_the_summary_says_on_what_the_run_ran() -> None:
    s = quickstart()
    s["context"] = {"backend": "containers", "topology": "replication", "engine": "mariadb 10.11",
                    "router": "haproxy", "versions": {"lab": "0.1.0", "mariadbd": "10.11.19"}}
    text = render(s, 120)
    assert ("containers · replication · mariadb 10.11 · router haproxy · lab 0.1.0, mariadbd "
            "10.11.19") in text
    s.pop("context")
    s.pop("backend", None)
    assert "back-end unknown" in render(s, 120)  # a run stored before it was recorded
