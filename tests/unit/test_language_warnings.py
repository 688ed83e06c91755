# ruff: noqa: E501  (exact messages read best unwrapped)
"""Warnings: a valid experiment whose faults no workload measures.

Each warning is asserted with its exact message, hint and position; a file with no problem
has none; ``lab check`` prints them like errors (``warning:`` instead of ``error:``) and still
exits 0, while errors still make it exit 2.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dsl.api import format_errors, plan_text
from dsl.compile_warnings import plan_warnings, root_notes
from dsl.errors import LanguageError
from lab.cli import main
from lab.cli.lang import cmd_check, cmd_plan

DOC = (Path(__file__).resolve().parents[2] / "docs" / "language.md").read_text(encoding="utf-8")

Found = tuple[int, int, str, str | None]


def exp(body: str, duration: str = "30s") -> str:
    """A replication experiment with ``body`` from line 4 on."""
    return (
        'experiment "t" {\n'
        f"  duration {duration}\n"
        "  topology replication { primary db1  replicas db2, db3 }\n"
        f"{body}"
        "}\n"
    )


def warnings_of(text: str) -> list[LanguageError]:
    return plan_warnings(plan_text(text, "t.exp"), "t.exp")


def found(text: str) -> list[Found]:
    out = []
    for w in warnings_of(text):
        assert w.severity == "warning"
        assert w.path == "t.exp"
        out.append((w.span.line, w.span.column, w.message, w.hint))
    return out


# --- each warning ------------------------------------------------------------------------------


def test_fault_at_the_end_of_the_only_workload() -> None:
    text = exp(
        "  workload writes: unique_writes { target db1  duration 20s }\n  at 20s kill db1\n", "1m"
    )
    assert found(text) == [
        (
            5,
            3,
            "fault at 20s falls 0s before the end of workload 'writes' (20s): nothing after it is measured",
            "workloads: writes 0s to 20s; lengthen a workload's duration well past 20s",
        )
    ]


def test_fault_less_than_a_second_before_the_end() -> None:
    text = exp("  workload w: probe { target db1  duration 10s }\n  at 9500ms kill db2\n")
    assert found(text) == [
        (
            5,
            3,
            "fault at 9.5s falls 0.5s before the end of workload 'w' (10s): nothing after it is measured",
            "workloads: w 0s to 10s; lengthen a workload's duration well past 9.5s",
        )
    ]
    # a full second of load after the fault is enough
    assert found(exp("  workload w: probe { target db1  duration 10s }\n  at 9s kill db2\n")) == []


def test_fault_near_the_end_of_every_running_workload() -> None:
    text = exp(
        "  workload a: probe { target db1  duration 10s }\n"
        "  workload b: probe { target db2  duration 10500ms }\n"
        "  workload c: probe { target db3  duration 5s }\n"
        "  at 10s pause db2\n"
    )
    assert found(text) == [
        (
            7,
            3,
            "fault at 10s falls within 1s of the end of every workload running then (a at 10s, b at 10.5s): nothing after it is measured",
            "workloads: a 0s to 10s, b 0s to 10.5s, c 0s to 5s; lengthen a workload's duration well past 10s",
        )
    ]
    # one workload that goes on long enough measures it
    ok = exp(
        "  workload a: probe { target db1  duration 10s }\n"
        "  workload b: probe { target db2 }\n"
        "  at 10s pause db2\n"
    )
    assert found(ok) == []


def test_fault_near_the_end_of_a_workload_that_runs_for_the_whole_experiment() -> None:
    text = exp("  workload w: probe { target db1 }\n  at 29500ms restart db2\n")
    assert found(text) == [
        (
            5,
            3,
            "fault at 29.5s falls 0.5s before the end of workload 'w' (30s): nothing after it is measured",
            "workloads: w 0s to 30s (the whole experiment); lengthen the experiment's duration well past 29.5s",
        )
    ]


def test_fault_outside_every_workload() -> None:
    text = exp(
        "  workload w: probe { target db1  duration 10s }\n"
        "  workload r: probe { target db2  operation read  duration 12s }\n"
        "  at 15s promote db2\n"
    )
    assert found(text) == [
        (
            6,
            3,
            "fault at 15s falls outside every workload's window: no workload runs then, so nothing measures it",
            "workloads: w 0s to 10s, r 0s to 12s; lengthen a workload's duration past 15s",
        )
    ]


def test_fault_after_a_workload_bounded_by_rows_and_a_duration() -> None:
    """``rows`` may end it sooner, never later: past its duration nothing measures."""
    text = exp(
        "  workload fill: unique_writes { target db1  rows 5000  duration 10s }\n"
        "  at 15s kill db1\n"
        "  at 9800ms kill db2\n"
    )
    assert found(text) == [
        (
            5,
            3,
            "fault at 15s falls outside every workload's window: no workload runs then, so nothing measures it",
            "workloads: fill 0s to 10s at most; lengthen a workload's duration past 15s",
        )
    ]


def test_fault_without_any_workload() -> None:
    assert found(exp("  at 5s network partition db2\n")) == [
        (
            4,
            3,
            "fault at 5s: the experiment has no workload, so nothing measures it",
            "add a workload that runs through the fault",
        )
    ]


def test_fault_at_the_experiments_duration() -> None:
    text = exp("  workload w: probe { target db1 }\n  at 30s stop db2\n")
    assert found(text) == [
        (
            5,
            3,
            "fault at 30s is at the end of the load (duration 30s): the run stops there, so nothing measures it",
            "move it earlier, or lengthen the experiment: duration ...",
        )
    ]


def test_every_kind_of_fault_is_checked() -> None:
    faults = [
        "kill db2",
        "pause db2",
        "stop db2",
        "restart db2",
        "cold restart db2",
        "promote db2",
        "stop replication db2",
        "network latency db2 100ms",
        "network bandwidth db2 1M/s",
        "network partition db2",
        "network link_down db2 on clients",
        "drop caches on db2",
        "set global max_connections = 4 on db2",
    ]
    for fault in faults:
        text = exp(f"  workload w: probe {{ target db1  duration 10s }}\n  at 20s {fault}\n")
        assert [f[2] for f in found(text)] == [
            "fault at 20s falls outside every workload's window: no workload runs then, so nothing measures it"
        ], fault


def test_recoveries_waits_and_sql_are_not_faults() -> None:
    text = exp(
        "  workload w: probe { target db1  duration 10s }\n"
        "  at 10s start db2\n"
        "  at 12s resume db3\n"
        "  at 14s start replication db2\n"
        "  at 16s network heal\n"
        "  at 18s wait until db2 caught_up timeout 10s\n"
        "  at 20s wait 1s\n"
        '  at 22s execute "SELECT 1" on db1\n'
        "  at 30s start db3\n"
    )
    assert found(text) == []


def test_steps_are_not_checked() -> None:
    text = exp(
        "  workload fill: unique_writes { target db1  duration 5s }\n"
        "  before load { kill db3 }\n"
        "  after fill { kill db2 }\n"
    )
    assert found(text) == []


# --- windows that are unknown before the run ---------------------------------------------------


def test_no_warning_when_a_workload_is_bounded_only_by_rows_or_operations() -> None:
    for bounded in (
        "unique_writes { target db1  rows 5000 }",
        "probe { target db1  operations 1000 }",
    ):
        text = exp(
            "  workload w: probe { target db1  duration 5s }\n"
            f"  workload fill: {bounded}\n"
            "  at 20s kill db2\n"
        )
        assert found(text) == [], bounded


def test_no_warning_when_a_workload_starts_after_another() -> None:
    text = exp(
        "  workload fill: unique_writes { target db1  duration 5s }\n"
        "  workload after: probe { target db1  duration 5s  start after fill }\n"
        "  at 8s kill db2\n"
    )
    assert found(text) == []


def test_the_end_of_the_load_is_known_even_when_windows_are_not() -> None:
    text = exp("  workload fill: unique_writes { target db1  rows 5000 }\n  at 30s kill db2\n")
    assert [f[2] for f in found(text)] == [
        "fault at 30s is at the end of the load (duration 30s): the run stops there, so nothing measures it"
    ]


# --- files with no problem, cells --------------------------------------------------------------

GOOD = exp(
    "  workload writes: unique_writes { target db1  duration 25s }\n"
    "  workload probe: probe { target db2 }\n"
    "  at 10s kill db1\n"
    "  at 11s promote db2\n"
    "  at 20s start db1\n"
    "  at 29s network partition db3\n"
)


def test_disk_full_needs_root_is_a_note_not_a_warning() -> None:
    text = exp(
        "  workload writes: probe { target db1 }\n  at 5s disk full db2\n  at 9s disk free db2\n"
    )
    assert found(text) == []
    plan = plan_text(text, "t.exp")
    notes = root_notes(plan, "t.exp")
    assert [(n.span.line, n.severity, n.message) for n in notes] == [
        (
            5,
            "note",
            "`disk full db2` needs root: mounting a tmpfs of its own for db2's data "
            "directory when the topology starts",
        )
    ]


def test_a_file_with_no_problem_has_no_warnings() -> None:
    assert warnings_of(GOOD) == []


def test_the_valid_examples_of_the_doc_warn_only_where_the_doc_says() -> None:
    blocks = re.findall(r"```([\w-]*)\n(.*?)```", DOC, re.S)
    warned = [
        re.search(r'experiment "([^"]+)"', body).group(1)  # type: ignore[union-attr]
        for lang, body in blocks
        if lang == "exp" and plan_warnings(plan_text(body, "example.exp"), "example.exp")
    ]
    assert warned == ["unmeasured"]  # the warnings example (root is a note, not a warning)


def test_the_warnings_example_of_the_doc_prints_what_the_doc_says() -> None:
    blocks = re.findall(r"```([\w-]*)\n(.*?)```", DOC, re.S)
    i = next(i for i, (lang, body) in enumerate(blocks) if lang == "exp" and '"unmeasured"' in body)
    body, (lang, output) = blocks[i][1], blocks[i + 1]
    assert lang == "text"
    warnings = plan_warnings(plan_text(body, "example.exp"), "example.exp")
    assert format_errors(warnings, {"example.exp": body}) == output.rstrip("\n")


def test_a_warning_that_holds_in_some_cells_only_names_them() -> None:
    """Durations cannot vary per cell in the language today; the check is per cell anyway."""
    text = exp(
        "  variant a { }\n  variant b { }\n"
        "  workload w: probe { target db1  duration 20s }\n"
        "  at 15s kill db2\n"
    )
    plan = plan_text(text, "t.exp")
    assert plan_warnings(plan, "t.exp") == []
    short = plan.cells[1].workloads[0].model_copy(update={"duration": 10.0})
    cells = [plan.cells[0], plan.cells[1].model_copy(update={"workloads": [short]})]
    [w] = plan_warnings(plan.model_copy(update={"cells": cells}), "t.exp")
    assert (w.span.line, w.span.column) == (7, 3)
    assert w.message == (
        "fault at 15s falls outside every workload's window: no workload runs then, so "
        "nothing measures it (only in cell 2 'b')"
    )
    # the same warning in every cell is given once, without naming cells
    both = [c.model_copy(update={"workloads": [short]}) for c in plan.cells]
    [w] = plan_warnings(plan.model_copy(update={"cells": both}), "t.exp")
    assert w.message.endswith("so nothing measures it")


# --- the command line ----------------------------------------------------------------------------

WARNED = exp(
    "  workload writes: unique_writes { target db1  duration 20s }\n  at 20s kill db1\n", "1m"
)
BAD = exp("  workload w: probe { target db1 }\n  at 10s kill db4\n")


def test_lab_check_prints_warnings_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warned, good = tmp_path / "warned.exp", tmp_path / "good.exp"
    warned.write_text(WARNED)
    good.write_text(GOOD)
    assert main(["check", str(good), str(warned)]) == 0
    out, err = capsys.readouterr()
    assert out == f"{good}: ok\n{warned}: ok, with 1 warning\n"
    assert err == (
        f"{warned}:5:3: warning: fault at 20s falls 0s before the end of workload 'writes' (20s): nothing after it is measured\n"
        "      at 20s kill db1\n"
        "      ^^^^^^^^^^^^^^^\n"
        "    hint: workloads: writes 0s to 20s; lengthen a workload's duration well past 20s\n"
        "\n"
        "1 warning in 1 file\n"
    )


def test_lab_check_exits_2_on_errors_even_with_warnings_elsewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warned, bad = tmp_path / "warned.exp", tmp_path / "bad.exp"
    warned.write_text(WARNED)
    bad.write_text(BAD)
    assert cmd_check([str(warned), str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{warned}:5:3: warning: fault at 20s" in err
    assert f"{bad}:5:15: error: unknown node 'db4'" in err
    assert err.endswith("1 warning in 1 file\n1 error in 1 file\n")
    assert main(["check", str(bad)]) == 2


def test_a_file_with_errors_gets_no_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    both = tmp_path / "both.exp"
    both.write_text(exp("  workload w: probe { target db1  duration 5s }\n  at 10s kill db4\n"))
    assert cmd_check([str(both)]) == 2
    err = capsys.readouterr().err
    assert "error: unknown node 'db4'" in err
    assert "warning" not in err


def test_lab_plan_prints_warnings_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warned = tmp_path / "warned.exp"
    warned.write_text(WARNED)
    assert cmd_plan(str(warned), as_json=True) == 0
    out, err = capsys.readouterr()
    assert out.startswith("{")
    assert err.startswith(f"{warned}:5:3: warning: fault at 20s falls 0s before the end")


def test_a_former_primary_may_be_waited_for_after_a_promote() -> None:
    """After `promote db2` the first primary rejoins as a replica: `wait until db1
    caught_up` is what a DBA writes next (it was refused as 'db1 is the primary')."""
    from dsl.api import check_text

    text = """experiment "t" {
      duration 20s
      topology replication { primary db1  replicas db2 }
      workload w: probe { target db2 }
      at 5s kill db1
      at 6s promote db2
      at 9s start db1
      at 10s wait until db1 caught_up timeout 5s
    }"""
    assert [e.message for e in check_text(text, "t.exp") if e.severity == "error"] == []
    no_promote = text.replace("at 6s promote db2\n", "")
    assert any("'db1' is the primary" in e.message for e in check_text(no_promote, "t.exp"))


# --- a heal at the end that may undo what an expectation is about ---------------------------


HEALED = (
    "  workload w: unique_writes { target db1 }\n"
    "  at 10s kill db1{left}\n"
    "  expect missing_transactions(db2) == 5000\n"
    "  expect lost_writes(w) == 0\n"
)


def test_an_expectation_read_after_the_heal_undid_its_fault() -> None:
    """A file killed the primary (without `for good`) and expected the replica to miss 5,000
    transactions: the heal at the end restarted the primary, the replica caught up, the figure
    read 0, and `lab check` said nothing."""
    assert found(exp(HEALED.replace("{left}", ""))) == [
        (6, 3,
         "missing_transactions(db2) is read after the lab heals the faults still in force at "
         "the end (`kill db1` (line 5)): the heal may undo what it is about (a primary started "
         "again lets db2 catch up)",
         "say `for good` after the fault to leave it in place at the end, or expect "
         "missing_transactions(db2).before_heal (as the timeline left it)"),
        (7, 3,
         "lost_writes(w) is read after the lab heals the faults still in force at the end "
         "(`kill db1` (line 5)): the heal may undo what it is about (a node started again "
         "brings back the writes only it had)",
         "say `for good` after the fault to leave it in place at the end"),
    ]


def test_no_heal_warning_when_the_fault_stays_or_is_undone_or_before_heal_is_read() -> None:
    assert found(exp(HEALED.replace("{left}", " for good"))) == []
    assert found(exp(HEALED.replace("{left}", "\n  at 20s start db1"))) == []
    assert found(exp(HEALED.replace("{left}", " for 2s"))) == []
    before = HEALED.replace("{left}", "").replace(
        "missing_transactions(db2) ==", "missing_transactions(db2).before_heal ==").replace(
        "  expect lost_writes(w) == 0\n", "")
    assert found(exp(before)) == []
    assert found(exp(HEALED.replace("{left}", "") + "  leave faults\n")) == []


def test_no_lost_writes_heal_warning_for_a_node_that_is_not_the_writer_at_the_end() -> None:
    """lost_writes is judged on the writer at the end: a former primary started again after a
    promote comes back read-only (its own writes stop its replication, 1236), and a replica
    takes no writes, so healing either cannot bring writes back (a docs-only reader was told
    it could). The killed primary with no promote still warns (above)."""
    promoted = ("  workload w: unique_writes { target db1 }\n"
                "  at 10s kill db1\n"
                "  at 12s promote db2\n"
                "  expect lost_writes(w) == 0\n")
    assert [m for _l, _c, m, _h in found(exp(promoted)) if "lost_writes" in m] == []
    replica = ("  workload w: unique_writes { target db1 }\n"
               "  at 10s kill db3\n"
               "  expect lost_writes(w) == 0\n")
    assert [m for _l, _c, m, _h in found(exp(replica)) if "lost_writes" in m] == []
    killed_again = promoted.replace("  expect", "  at 20s kill db2\n  expect")
    assert any("lost_writes(w) is read after the lab heals" in m
               for _l, _c, m, _h in found(exp(killed_again)))
