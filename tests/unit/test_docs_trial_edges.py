"""Sharp edges a second docs-only trial met (six experiments written from the docs alone):
each test fails on the code before."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from dsl.api import check_text, plan_text
from dsl.compile_warnings import plan_warnings
from dsl.router_settings import runtime_problems, value_problem
from lab.cli import lang


def messages(text: str) -> list[str]:
    return [e.message for e in check_text(text, "t.exp")]


GALERA_ROUTER = """experiment "t" {{
  duration 20s
  topology galera {{ nodes g1, g2, g3 }}
  router proxysql {{ writers g1, g2, g3 }}
  workload w: unique_writes {{ target router.writer  rate 100/s }}
  at 5s kill router.writer
{more}  expect lost_writes == 0
}}
"""


def test_a_start_of_a_routers_writer_recovers_a_kill_of_router_writer() -> None:
    """The docs say a recovery names its node; the heal warning took `kill router.writer`
    as still in force after `start g1`, and said to write `for good`."""
    recovered = plan_text(GALERA_ROUTER.format(more="  at 13s start g1\n"))
    assert [w.message for w in plan_warnings(recovered)] == []
    left = plan_text(GALERA_ROUTER.format(more=""))
    assert any("kill router.writer" in w.message for w in plan_warnings(left))


def test_proxysql_values_with_a_unit_are_refused_and_what_it_did_not_take_is_said() -> None:
    assert value_problem("mysql-monitor_ping_interval", "500ms") == (
        "mysql-monitor_ping_interval = 500ms: ProxySQL takes a plain number in the variable's "
        "own unit (milliseconds for its intervals and timeouts): write 500, or the value in "
        "that unit")
    assert value_problem("mysql-monitor_ping_interval", "500") is None
    assert value_problem("mysql-monitor_enabled", "true") is None
    asked = {"mysql-monitor_ping_intervall": "500", "mysql-monitor_ping_interval": "soon",
             "mysql-monitor_enabled": "1", "mysql-monitor_read_only_timeout": "800"}
    runtime = {"mysql-monitor_ping_interval": "10000", "mysql-monitor_enabled": "true",
               "mysql-monitor_read_only_timeout": "800"}
    assert runtime_problems(asked, runtime) == [
        "ProxySQL has no variable mysql-monitor_ping_intervall (set in the router block): "
        "misspelt? its names: SELECT variable_name FROM global_variables on the admin port",
        "ProxySQL kept mysql-monitor_ping_interval = 10000 where the file set soon: it refused "
        "the value (see its log)"]


def test_downtime_of_a_sysbench_workload_is_refused_with_what_measures_it() -> None:
    errors = check_text("""experiment "t" {
  duration 10s
  topology replication { primary db1  replicas db2 }
  workload rd: sysbench oltp_point_select { target db2 }
  expect downtime(rd) < 1s
}
""", "t.exp")
    (e,) = errors
    assert e.message == ("downtime is measured from each operation, and sysbench records "
                         "per-second rows only; 'rd' is a sysbench")
    assert e.hint is not None and "probe { target db2  operation read }" in e.hint


def test_a_parameter_the_language_refused_is_not_also_called_unused() -> None:
    got = messages("""experiment "t" {
  duration 10s
  topology replication { primary db1  replicas db2 }
  router proxysql { writer db1  readers db2  check every $chk }
  workload w: unique_writes { target router.writer  rate $r }
  vary chk in 200, 500
  vary r in 100, 200
}
""")
    assert got == ["'$chk' cannot be used here: the router's settings are fixed in a file (a "
                   "$parameter is for a workload's numbers: threads $n)",
                   "'rate' cannot take a parameter"]


def test_fault_space_mistakes_say_the_form_and_leave_no_empty_space_error() -> None:
    got = messages("""experiment "t" {
  duration 20s
  topology replication { primary db1  replicas db2, db3 }
  workload w: unique_writes { target db1  rate 50/s }
  faults {
    kill any replica for 1s .. 4s
    pause db2, db3 for 1s
    kill any replica for 1s up to 2 times
  }
}
""")
    assert got == ["a range is written without spaces: low..high",
                   "a fault of a fault space names one target",
                   "'up' is not a count of the language"]


def test_lab_plan_shows_the_fault_space_beside_the_plan(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "fs.exp"
    f.write_text("""experiment "fs" {
  duration 20s
  topology replication { primary db1  replicas db2, db3 }
  workload w: unique_writes { target db1  rate 50/s }
  faults {
    between 3s and 12s
    kill any replica for 1s..4s at most 2 times
  }
}
""")
    assert lang.cmd_plan(str(f), as_json=False) == 0
    out = capsys.readouterr().out
    assert "Fault space (lab explore draws timelines from it" in out
    assert "kill any replica for 1s..4s at most 2 times" in out
    assert lang.cmd_plan(str(f), as_json=True) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["fault_space"]["faults"][0]["verb"] == "kill"


def test_the_matrix_says_which_node_a_change_is_on_and_the_routers_own_variables() -> None:
    plan = plan_text("""experiment "t" {
  duration 10s
  topology galera { nodes g1, g2, g3 }
  router proxysql { writers g1, g2, g3
    set mysql-monitor_galera_healthcheck_interval = $interval }
  workload w: unique_writes { target router.writer  rate 50/s }
  vary interval in 500, 1000
  variant a { }
  variant b { wsrep_slave_threads = 1 }
}
""")
    out = io.StringIO()
    lang.render_plan(plan, Console(file=out, width=250, highlight=False))
    text = out.getvalue()
    assert "proxysql: mysql-monitor_galera_healthcheck_interval = 1000" in text
    pp = plan_text("""experiment "t" {
  duration 10s
  topology primary_primary { nodes p1, p2 }
  workload w: unique_insert { target p1, p2  keys auto_increment  rate 50/s }
  variant right { }
  variant copied { auto_increment_offset = 1 }
}
""")
    out = io.StringIO()
    lang.render_plan(pp, Console(file=out, width=250, highlight=False))
    assert "auto_increment_offset = 1 (p2)" in out.getvalue()


def test_a_config_block_inside_a_variant_says_where_its_settings_go() -> None:
    got = check_text("""experiment "t" {
  duration 10s
  topology galera { nodes g1, g2, g3 }
  workload w: unique_writes { target g1 }
  variant b { config { wsrep_slave_threads = 1 } }
}
""", "t.exp")
    assert got[0].message == "a variant's settings go straight in its braces, without config { }"
    assert got[0].hint is not None and "variant relaxed { sync_binlog = 0 }" in got[0].hint


PP = """experiment "t" {{
  duration 15s
  topology primary_primary {{ nodes p1, p2 }}
  variant wrong {{ auto_increment_offset = 1 }}
  workload ins: unique_insert {{ target p1, p2  clients 2  keys auto_increment{rate} }}
{more}}}
"""


def test_paced_inserts_on_two_primaries_warn_that_collisions_cannot_show() -> None:
    """The clients of a rate take turns at evenly spaced slots: with wrong offsets, two
    primaries at 200/s never collided here, unpaced they stopped on 1062 within seconds."""
    warned = plan_warnings(plan_text(PP.format(rate="  rate 200/s", more="")))
    assert [w.message for w in warned][:1] == [
        "workload 'ins' is paced (rate 200/s): its clients take turns at evenly spaced slots, "
        "so the primaries' inserts never meet and an auto-increment collision cannot show"]
    assert warned[0].span.line == 5
    assert plan_warnings(plan_text(PP.format(rate="", more=""))) == []
    cut = "  at 5s network partition p2 on replication\n  at 9s network heal p2\n"
    assert plan_warnings(plan_text(PP.format(rate="  rate 200/s", more=cut))) == []


def test_a_parameter_only_in_a_comment_is_still_unused() -> None:
    got = messages("""experiment "t" {
  duration 10s
  topology single { node db1 }
  workload w: unique_writes { target db1 }   # clients $n later
  vary n in 1, 2
}
""")
    assert got == ["'vary n' is not used: no workload says $n"]


def test_an_empty_fault_space_is_said_beside_a_typo_after_it() -> None:
    got = messages("""experiment "t" {
  duration 20s
  topology replication { primary db1  replicas db2 }
  workload w: unique_writes { target db1 }
  faults {
    between 3s and 12s
  }
  expect lost_writes = 0
}
""")
    assert any(m.endswith("names no fault") for m in got), got


def test_lost_writes_of_sysbench_gets_no_downtime_hint_and_faults_silence_the_pace_warning(
        ) -> None:
    errors = check_text("""experiment "t" {
  duration 10s
  topology replication { primary db1  replicas db2 }
  workload rd: sysbench oltp_insert { target db1 }
  expect lost_writes(rd) == 0
}
""", "t.exp")
    assert errors and "downtime" not in (errors[0].hint or "")
    latency = "  at 5s network latency p2 50ms on replication for 3s\n"
    assert plan_warnings(plan_text(PP.format(rate="  rate 200/s", more=latency))) == []
    assert plan_warnings(plan_text(PP.format(rate="  rate 2000/s", more=""))) == []
