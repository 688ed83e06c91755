"""Text -> models: units, every statement's model, hints, error formatting, the API's
promises (never raise from check_file) and the CLI's exit statuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsl.api import check_file, check_text, load_plan, parse_text
from dsl.errors import LanguageError, LanguageErrors, format_error
from dsl.models import (
    NO_SPAN,
    ConvertStandalone,
    DropCaches,
    NetworkFault,
    NodeAction,
    ParamRef,
    Promote,
    ReplicationControl,
    ReplicationTopology,
    RunSql,
    SetGlobal,
    Sleep,
    Span,
    WaitUntil,
)
from dsl.units import QuantityError, parse_quantity
from lab.cli.lang import cmd_check, cmd_plan, describe_action

# --- units ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,kind,value",
    [
        ("10ms", "duration", 0.01),
        ("2s", "duration", 2.0),
        ("1m30s", "duration", 90.0),
        ("1h", "duration", 3600.0),
        ("500us", "duration", 0.0005),
        ("1.5s", "duration", 1.5),
        ("64M", "size", 64 * 1024**2),
        ("1G", "size", 1024**3),
        ("512K", "size", 512 * 1024),
        ("10MB", "size", 10 * 1024**2),
        ("100B", "size", 100.0),
        ("200/s", "rate", 200.0),
        ("1M/s", "bandwidth", 1024**2),
        ("5%", "percent", 0.05),
        ("0.5%", "percent", 0.005),
        ("3", "count", 3.0),
    ],
)
def test_quantities(text: str, kind: str, value: float) -> None:
    q = parse_quantity(text)
    assert (q.kind, q.text) == (kind, text)
    assert q.value == pytest.approx(value)


@pytest.mark.parametrize("text", ["10x", "30s1m", "1s1s", "10sec", "1" * 20 + "s", "64mb"])
def test_bad_quantities(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_unit_hints() -> None:
    errors = check_text('experiment "u" { topology single { node a }\n duration 40\n}')
    assert errors[0].hint == "add a unit: 40s"
    errors = check_text('experiment "u" { topology single { node a }\n duration 10sec\n}')
    assert errors[0].hint == "write seconds as 's': 10s"


# --- statements to models ---------------------------------------------------------------------

FULL = """
experiment "full" {
  title "T"
  description "a \\"quoted\\" word"
  tags a, b-c
  seed 9
  duration 2m
  repeat 2
  leave faults
  topology replication {
    engine mysql 8.0.36
    primary db1
    replicas db2, db3
    replication file_position
    semi_sync on
    crash_safe on
    delay db3 by 10m
    config db2 { x = 1 }
  }
  workload w: probe { target db1  operation read  every 5ms  timeout 2s  operations 10 }
  workload f: unique_writes { target db1  rows 100  clients 3  rate 50/s }
  after f {
    stop replication db2 io_only
    start replication db2 sql_only
    wait 1s
  }
  before load { set global a = 1 on db1, db2 }
  at 1s kill db2
  at 2s start db2 with relay_log_recovery = ON, b = 2
  at 3s cold restart db3
  at 4s drop caches
  at 5s drop caches on db1
  at 6s promote db2
  at 7s network latency db2 10ms jitter 1ms on replication
  at 8s network bandwidth db2 2M/s
  at 9s network heal
  at 10s wait until db2 caught_up timeout 1m
  at 11s execute "SELECT 1" on db1
  expect errors(w, 1213) last 30s > 0
  expect stale_reads(w on db1).p99 < 1s
  report latency(w).p999
}
"""


def test_every_statement_becomes_its_model() -> None:
    # stale_reads on a probe is invalid; check the model without validation errors mixed in
    text = FULL.replace("  expect stale_reads(w on db1).p99 < 1s\n", "")
    exp = parse_text(text, "full.exp")
    assert (exp.title, exp.description, exp.tags) == ("T", 'a "quoted" word', ["a", "b-c"])
    assert (exp.seed, exp.duration, exp.repeat, exp.leave_faults) == (9, 120.0, 2, True)
    t = exp.topology
    assert isinstance(t, ReplicationTopology)
    assert (t.engine.flavor, t.engine.version, t.mode, t.semi_sync, t.crash_safe) == (
        "mysql",
        "8.0.36",
        "file_position",
        True,
        True,
    )
    assert t.delays[0].node.name == "db3" and t.delays[0].seconds == 600.0
    assert t.configs[0].node is not None and t.configs[0].settings == {"x": "1"}
    w = exp.workloads[0]
    assert (w.operation, w.every, w.timeout, w.ops) == ("read", 0.005, 2.0, 10)
    f = exp.workloads[1]
    assert (f.rows, f.clients, f.rate) == (100, 3, 50.0)
    after = exp.steps[0]
    assert after.when == "after" and after.workload == "f"
    assert [type(a) for a in after.actions] == [ReplicationControl, ReplicationControl, Sleep]
    assert [a.threads for a in after.actions[:2]] == ["io", "sql"]  # type: ignore[union-attr]
    sg = exp.steps[1].actions[0]
    assert isinstance(sg, SetGlobal) and [n.name for n in sg.nodes] == ["db1", "db2"]
    actions = [t.action for t in exp.timeline]
    assert [type(a) for a in actions] == [
        NodeAction,
        NodeAction,
        NodeAction,
        DropCaches,
        DropCaches,
        Promote,
        NetworkFault,
        NetworkFault,
        NetworkFault,
        WaitUntil,
        RunSql,
    ]
    start = actions[1]
    assert isinstance(start, NodeAction)
    assert start.options == {"relay_log_recovery": "ON", "b": "2"}
    assert isinstance(actions[2], NodeAction) and actions[2].verb == "cold_restart"
    assert isinstance(actions[3], DropCaches) and actions[3].node is None
    lat = actions[6]
    assert isinstance(lat, NetworkFault)
    assert (lat.latency, lat.jitter, lat.link) == (0.01, 0.001, "replication")
    bw = actions[7]
    assert isinstance(bw, NetworkFault) and bw.bandwidth == 2 * 1024**2 and bw.link == "all"
    assert isinstance(actions[8], NetworkFault) and actions[8].node is None
    wait = actions[9]
    assert isinstance(wait, WaitUntil) and wait.timeout == 60.0
    e = exp.expectations[0]
    assert (e.metric.name, e.metric.subject, e.metric.code, e.metric.last) == (
        "errors",
        "w",
        1213,
        30.0,
    )
    assert e.text == "expect errors(w, 1213) last 30s > 0"
    assert e.value.span.line == e.span.line
    assert exp.reports[0].metric.stat == "p999"


def test_spans_point_at_names() -> None:
    exp = parse_text('experiment "s" {\n  topology single { node db1 }\n  at 1s kill db1\n}')
    action = exp.timeline[0].action
    assert isinstance(action, NodeAction)
    assert action.node.span == Span(line=3, column=14, end_line=3, end_column=17)
    assert exp.timeline[0].span.column == 3


def test_params_stay_references_in_the_model() -> None:
    exp = parse_text("""experiment "p" {
      topology single { node db1 }
      vary t in 1, 2
      workload s: sysbench oltp_insert { target db1  threads $t }
    }""")
    assert isinstance(exp.workloads[0].threads, ParamRef)
    assert exp.workloads[0].threads.name == "t"


def test_several_statements_on_one_line_and_comments() -> None:
    exp = parse_text(
        'experiment "c" {  # comment\n  topology single { node db1 }  duration 5s '
        "seed 2 # more\n\n  # only a comment\n}\n"
    )
    assert (exp.duration, exp.seed) == (5.0, 2)


def test_windows_line_endings() -> None:
    exp = parse_text('experiment "w" {\r\n  topology single { node db1 }\r\n}\r\n')
    assert exp.name == "w"


# --- hints and collecting errors ----------------------------------------------------------------


def test_did_you_mean_for_keywords_and_names() -> None:
    errors = check_text('experiment "h" {\n  topology single { node db1 }\n  durattion 4s\n}')
    assert errors[0].hint == "did you mean 'duration'?"
    errors = check_text(
        'experiment "h" {\n  topology single { node db1 }\n'
        "  workload w: probe { target db1 }\n  expect latency(w).p98 < 1s\n}"
    )
    assert errors[0].hint == "did you mean 'p99'?"
    errors = check_text('experiment "h" {\n  topology single { node db1 }\n  at 1s kill db2\n}')
    assert errors[0].hint == "did you mean 'db1'?"
    errors = check_text('experiment "h" {\n  topology replication { primary db1  replicas db2, '
                        'db3 }\n  at 1s kill DB3\n}')
    assert errors[0].hint == "did you mean 'db3'?"  # the same name but for case comes first


def test_a_syntax_error_does_not_hide_the_other_errors_of_the_file() -> None:
    """A misspelt keyword and a misspelt workload line are syntax errors; the rest of the file
    is still checked (unknown node db7, 150 %), but not what only follows from the blanked
    lines: 'w' unknown (its declaration was blanked), 'at 50s' after the default duration."""
    errors = check_text("""experiment "multi" {
  durattion 40s
  topology replication { primary db1  replicas db2, db3 }
  workloud w: probe { target db1 }
  workload r: read_your_writes { write db1  read db2 }
  at 5s kill db7
  at 50s start db2
  expect downtime(w) < 1s
  expect stale_reads(r) < 150%
}""")
    assert [(e.span.line, e.message.split(" (")[0]) for e in errors] == [
        (2, "unknown keyword 'durattion'"),
        (4, "unknown keyword 'workloud'"),
        (6, "unknown node 'db7'"),
        (9, "a ratio cannot exceed 100%, not 150%"),
    ]


def test_every_semantic_error_is_reported_sorted() -> None:
    errors = check_text("""experiment "many" {
  topology replication { primary db1  replicas db2 }
  workload w: probe { target db9 }
  at 99s kill db8
  expect downtime(nope) < 1s
}""")
    assert [(e.span.line, e.message.split(" (")[0]) for e in errors] == [
        (3, "unknown node 'db9'"),
        (4, "at 99s is after the end of the load"),
        (4, "unknown node 'db8'"),
        (5, "unknown workload 'nope'"),
    ]


def test_several_syntax_errors_are_reported() -> None:
    errors = check_text("""experiment "syn" {
  topology single { node db1 }
  durattion 4s
  seed x
  expect lost_writes = 0
}""")
    assert [e.span.line for e in errors] == [3, 4, 5]


def test_language_errors_str_shows_the_source() -> None:
    with pytest.raises(LanguageErrors) as info:
        parse_text('experiment "x" {\n  topology single { node db1 }\n  at 1s kill db2\n}', "x.exp")
    assert str(info.value) == (
        "x.exp:3:14: error: unknown node 'db2' (known: db1)\n"
        "      at 1s kill db2\n"
        "                 ^^^\n"
        "    hint: did you mean 'db1'?"
    )


def test_format_error_without_position_or_source() -> None:
    err = LanguageError("a.exp", NO_SPAN, "no such file", "check the path")
    assert format_error(err, None) == "a.exp: error: no such file\n    hint: check the path"
    err = LanguageError("a.exp", Span(line=1, column=3, end_line=1, end_column=5), "bad")
    assert format_error(err, None) == "a.exp:1:3: error: bad"
    assert format_error(err, "\tx yy\n") == "a.exp:1:3: error: bad\n    \tx yy\n    \t ^^"


# --- the API never raises for bad input -----------------------------------------------------------


def test_check_file_never_raises(tmp_path: Path) -> None:
    assert check_file(tmp_path / "missing.exp")[0].message == "no such file"
    assert check_file(tmp_path)[0].message == "is a directory, not an .exp file"
    binary = tmp_path / "bin.exp"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert "not UTF-8" in check_file(binary)[0].message
    nul = tmp_path / "nul.exp"
    nul.write_text('experiment "x" {\x00}')
    assert check_file(nul)[0].message == "the file contains a NUL character"
    bom = tmp_path / "bom.exp"
    bom.write_text('\ufeffexperiment "x" { topology single { node a } }', encoding="utf-8")
    assert check_file(bom) == []


# --- the CLI ----------------------------------------------------------------------------------

GOOD = (
    'experiment "good" {\n  topology single { node db1 }\n  workload w: probe { target db1 }\n}\n'
)
BAD = 'experiment "bad" {\n  topology single { node db1 }\n  at 1s kill db4\n}\n'


def test_cmd_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = tmp_path / "good.exp", tmp_path / "bad.exp"
    good.write_text(GOOD)
    bad.write_text(BAD)
    assert cmd_check([str(good)]) == 0
    assert cmd_check([str(good), str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3:14: error: unknown node 'db4' (known: db1)" in err
    assert "      at 1s kill db4\n                 ^^^" in err
    assert err.rstrip().endswith("1 error in 1 file")
    assert cmd_check([str(tmp_path / "nope.exp")]) == 2
    assert cmd_check([]) == 2


def test_cmd_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = tmp_path / "good.exp", tmp_path / "bad.exp"
    good.write_text(GOOD)
    bad.write_text(BAD)
    assert cmd_plan(str(good), as_json=True) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cells"][0]["nodes"][0]["port"] == 23001
    assert data["cells"][0]["nodes"][0]["config"]["innodb_buffer_pool_size"] == "64M"
    assert cmd_plan(str(good), as_json=False) == 0
    out = capsys.readouterr().out
    for heading in ("Nodes", "Effective server config", "Workloads", "Matrix"):
        assert heading in out
    assert cmd_plan(str(bad), as_json=False) == 2
    assert "unknown node 'db4'" in capsys.readouterr().err


def test_plan_of_every_catalogue_experiment_renders(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[2] / "experiments"
    for path in sorted(root.glob("*.exp")):
        assert cmd_plan(str(path), as_json=False) == 0, path
    assert "Fault schedule" in capsys.readouterr().out


def test_describe_action_speaks_the_language() -> None:
    plan = load_plan(Path(__file__).resolve().parents[2] / "experiments" / "network-faults.exp")
    texts = [describe_action(t.action) for t in plan.timeline]
    assert texts[0] == "network latency db2 100ms jitter 10ms on replication"
    assert "network bandwidth db3 1M/s on all" in texts
    assert "network heal (all nodes) on all" in texts
    assert describe_action(ConvertStandalone(node={"name": "m1"})) == (  # type: ignore[arg-type]
        "convert m1 to standalone"
    )


def test_cli_turns_a_bug_into_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import lab.cli.lang as cli

    def boom(path: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "check_file", boom)
    monkeypatch.setattr(cli, "load_plan", boom)
    assert cli.cmd_check(["x.exp"]) == 2
    assert cli.cmd_plan("x.exp", as_json=False) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "x.exp: internal error in the language tools: RuntimeError: boom" in err
