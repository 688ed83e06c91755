"""Fault spaces: ``faults { ... }`` parsed, validated with positions, drawn deterministically
into concrete schedules, and written back as a plain .exp that parses to that timeline."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dsl.api import check_text, format_errors, parse_text
from dsl.space import Entry, draw, schedule_text, timeline_entries

SPACE = """experiment "space" {
  duration 30s
  topology replication { primary db1  replicas db2, db3 }
  router haproxy { writer db1  readers db2, db3 }
  workload w: probe { target router.writer }
  at 2s pause db2 for 1s
  faults {
    between 5s and 20s
    kill any replica for 1s..5s at most 2 times
    network partition the writer on replication for 2s..4s
    network latency any node but db1 50ms..200ms for 3s
    stop replication any of db2, db3 for 2s  pause db3 for 500ms 1 time
  }
  expect lost_writes == 0
}
"""


def test_a_fault_space_parses_into_its_model() -> None:
    exp = parse_text(SPACE, "s.exp")
    assert exp.faults is not None
    window = exp.faults.window
    assert window is not None and (window.low, window.high) == (5.0, 20.0)
    kill, part, lat, stop, pause = exp.faults.faults
    assert (kill.verb, kill.target.kind, kill.lasts.low, kill.lasts.high) == (
        "kill", "any_replica", 1.0, 5.0)
    assert (kill.times, kill.at_most) == (2, True)
    assert (part.verb, part.target.kind, part.link, part.times, part.at_most) == (
        "network partition", "writer", "replication", 1, False)
    assert lat.size is not None and (lat.size.low, lat.size.high) == (0.05, 0.2)
    assert [n.name for n in lat.target.nodes] == ["db1"] and lat.target.kind == "any_node"
    assert stop.target.kind == "any_of" and [n.name for n in stop.target.nodes] == ["db2", "db3"]
    assert (pause.target.kind, pause.lasts.low, pause.times) == ("node", 0.5, 1)
    assert exp.faults.span.line == 7 and exp.faults.span.end_line == 13


def _errors(text: str) -> str:
    return format_errors(check_text(text, "x.exp"), {"x.exp": text})


def test_errors_are_positioned_and_all_collected() -> None:
    text = """experiment "space" {
  duration 20s
  topology galera { nodes g1, g2, g3 }
  workload w: probe { target g1 }
  faults {
    between 5s and 25s
    kill any replica for 1s..5s at most 2 times
    pause any of g1, g4 for 1s..2s
    network latency g2 for 2s 3 time
    pause g2 for 17s
    kill g3 for 2s..1s
  }
}
"""
    out = _errors(text)
    assert ("x.exp:6:5: error: the window ends at 25s, after the end of the load (duration "
            "20s)") in out
    assert "x.exp:7:10: error: 'any replica' names no node: this topology has no replicas" in out
    assert "x.exp:8:22: error: unknown node 'g4' (known: g1, g2, g3)" in out
    assert "x.exp:9:5: error: 'network latency' in a fault space needs its delay" in out
    assert "x.exp:9:31: error: '3 time': more than one is 'times'" in out
    assert ("x.exp:10:18: error: a fault of 17s starting at 5s would end after the end of the "
            "load (duration 20s)") in out
    assert "x.exp:11:17: error: the range '2s..1s' goes down" in out
    assert out.endswith("") and out.count("error:") == 7


def test_a_fault_the_topology_cannot_take_is_reported_at_the_space_once() -> None:
    text = """experiment "space" {
  topology galera { nodes g1, g2, g3 }
  workload w: probe { target g1 }
  faults {
    stop replication any node but g1 for 2s
  }
}
"""
    errors = check_text(text, "x.exp")
    assert len(errors) == 1
    assert (errors[0].span.line, errors[0].span.column) == (5, 5)
    assert errors[0].message.startswith("drawn as 'stop replication g2': 'stop replication' "
                                        "controls asynchronous replication")


def test_units_and_counts_are_checked() -> None:
    base = ('experiment "s" {{\n  topology replication {{ primary db1  replicas db2 }}\n'
            '  workload w: probe {{ target db1 }}\n  faults {{ {} }}\n}}\n')
    assert "'for' needs a duration, but '2M' is a size" in _errors(base.format("kill db2 for 2M"))
    assert "a fault may happen 1 to 100 times, not '0'" in _errors(
        base.format("kill db2 for 1s 0 times"))
    assert "'kill' takes no link" in _errors(base.format("kill db2 on group for 1s"))
    assert "this fault space names no fault" in _errors(base.format(""))
    assert check_text(base.format("kill the writer for 1s..2s at most 3 times"), "x.exp") == []


def test_draws_are_deterministic_and_differ_between_indexes() -> None:
    exp = parse_text(SPACE, "s.exp")
    first = [draw(exp, 7, i) for i in range(1, 21)]
    assert first == [draw(exp, 7, i) for i in range(1, 21)]
    assert len({tuple(s) for s in first}) > 15
    assert first != [draw(exp, 8, i) for i in range(1, 21)]


def test_draws_in_another_process_are_the_same() -> None:
    code = ("from dsl.api import parse_text; from dsl.space import draw; import sys; "
            "print([e.text for e in draw(parse_text(sys.stdin.read()), 7, 3)])")
    out = subprocess.run([sys.executable, "-c", code], input=SPACE, capture_output=True,
                         text=True, check=True, env={"PYTHONHASHSEED": "123",
                                                     "PYTHONPATH": sys.path[0] or "."})
    exp = parse_text(SPACE, "s.exp")
    assert out.stdout.strip() == str([e.text for e in draw(exp, 7, 3)])


@pytest.mark.parametrize("index", range(1, 41))
def test_a_drawn_schedule_keeps_the_rules_of_its_space(index: int) -> None:
    exp = parse_text(SPACE, "s.exp")
    entries = draw(exp, 11, index)
    kills = [e for e in entries if e.action.startswith("kill")]
    assert len(kills) <= 2 and all(e.node in ("db2", "db3") for e in kills)
    assert all(1.0 <= e.lasts <= 5.0 for e in kills if e.lasts is not None)
    assert sum(e.action.startswith("network partition db1 on replication") for e in entries) == 1
    assert sum(e.action.startswith("pause db3") for e in entries) == 1
    for e in entries:
        assert 5.0 <= e.at <= 20.0 and e.lasts is not None and e.at + e.lasts <= 30.0
        assert round(e.at * 10, 6) == int(round(e.at * 10))  # the timeline's 0.1 s
        if e.action.startswith("network latency"):
            assert e.node in ("db2", "db3")
            assert 50 <= float(e.action.split()[3].removesuffix("ms")) <= 200
    by_node: dict[str, list[Entry]] = {}
    for e in entries:
        by_node.setdefault(e.node or "", []).append(e)
    for same in by_node.values():  # never two faults on one node at once (1 s apart)
        for a, b in zip(same, same[1:], strict=False):
            assert a.lasts is not None and a.at + a.lasts + 1.0 <= b.at


def test_a_schedule_is_a_plain_exp_with_that_timeline() -> None:
    exp = parse_text(SPACE, "s.exp")
    entries = timeline_entries(SPACE, exp) + draw(exp, 7, 1)
    text = schedule_text(SPACE, exp, entries, "schedule 1 of seed 7")
    assert "faults" not in text and "# schedule 1 of seed 7" in text
    concrete = parse_text(text, "c.exp")
    assert concrete.faults is None
    assert [e.text for e in timeline_entries(text, concrete)] == [
        e.text for e in sorted(entries, key=lambda e: e.at)]
    assert concrete.expectations[0].text == "expect lost_writes == 0"


def test_timeline_entries_keep_for_good_and_group_actions() -> None:
    text = """experiment "t" {
  duration 30s
  topology replication { primary db1  replicas db2, db3 }
  workload w: probe { target db1 }
  at 10s kill db2, db3 within 2s
  at 12s start db2, db3
  at 20s kill db3 for good
  at 5s network latency db2 200ms on replication for 2s
}
"""
    exp = parse_text(text)
    entries = timeline_entries(text, exp)
    assert [e.text for e in entries] == [
        "at 10s kill db2, db3 within 2s", "at 12s start db2, db3", "at 20s kill db3 for good",
        "at 5s network latency db2 200ms on replication for 2s"]
    again = schedule_text(text, exp, entries[:2], None)
    assert [e.text for e in timeline_entries(again, parse_text(again))] == [
        "at 10s kill db2, db3 within 2s", "at 12s start db2, db3"]
