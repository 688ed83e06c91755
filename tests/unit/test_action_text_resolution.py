"""One action of the language on its own (dsl.action_text), and the resolution stated with a
figure (lab.judge.resolution)."""

from __future__ import annotations

import pytest

from dsl.action_text import parse_action
from dsl.api import format_errors, plan_text
from dsl.errors import LanguageErrors
from dsl.models import Metric, NetworkFault, NodeAction, WaitUntil
from lab.judge.checkers import CheckResult
from lab.judge.resolution import figure_resolution

SOURCE = """\
experiment "x" {
  duration 10s
  topology replication {
    engine mariadb
    primary db1
    replicas db2, db3
  }
  workload paced: unique_writes {
    target db1
    clients 4
    rate 200/s
  }
  workload ryw: read_your_writes {
    write db1
    read db2
  }
  expect downtime(paced) < 1s
}
"""


def _errors(text: str) -> str:
    with pytest.raises(LanguageErrors) as e:
        parse_action(text, SOURCE, "x.exp")
    return format_errors(e.value.errors, {"<action>": text.strip()})


def test_an_action_is_read_as_the_timeline_reads_it() -> None:
    kill = parse_action("kill db2", SOURCE, "x.exp")
    assert isinstance(kill, NodeAction) and (kill.verb, kill.node.name) == ("kill", "db2")
    wait = parse_action("  wait until db2 caught_up timeout 30s ", SOURCE, "x.exp")
    assert isinstance(wait, WaitUntil) and wait.timeout == 30
    latency = parse_action("network latency db3 200ms", SOURCE, "x.exp")
    assert isinstance(latency, NetworkFault) and latency.latency == pytest.approx(0.2)


def test_a_wrong_action_points_into_the_action_text() -> None:
    assert _errors("kill db4") == (
        "<action>:1:6: error: unknown node 'db4' (known: db1, db2, db3)\n"
        "    kill db4\n"
        "         ^^^\n"
        "    hint: did you mean 'db3'?")
    assert _errors("kil db2").startswith("<action>:1:1: error: unknown action 'kil'\n"
                                         "    kil db2\n    ^^^")
    assert "one action on one line" in _errors("kill db2\nkill db3")
    assert "one action on one line" in _errors("   ")


def _metric(name: str, subject: str | None = None, on: str | None = None,
            stat: str | None = None) -> Metric:
    return Metric(name=name, subject=subject, on=on, stat=stat)  # type: ignore[arg-type]


def test_the_resolution_of_each_kind_of_figure() -> None:
    cell = plan_text(SOURCE).cells[0]
    results = {"stale_reads": CheckResult("stale_reads", True, {"subjects": {
        "ryw on db2": {"visibility": {"p99": 0.5, "resolution": 0.0101}}}})}
    assert figure_resolution(_metric("downtime", "paced"), cell, results) == \
        "± 20.0 ms (each of the 4 clients of 'paced' operates every 20.0 ms, plus one " \
        "operation's latency)"  # 4 clients / 200/s
    assert figure_resolution(_metric("downtime", "ryw"), cell, results) == \
        "± the gap between two operations of 'ryw', plus one operation's latency"
    assert figure_resolution(_metric("stale_reads", "ryw", "db2", "p99"), cell, results) == \
        "± 10.1 ms (the poll interval seen, plus a read)"
    assert figure_resolution(_metric("replication_lag", "db2"), cell, results) == \
        "1 s (sampled every second)"
    assert figure_resolution(_metric("lost_writes"), cell, results) == "exact (a count)"
    assert figure_resolution(_metric("stale_reads", "ryw"), cell, results, "percent") == \
        "exact (a ratio of counts)"
    assert figure_resolution(_metric("stalls", "paced", stat="max"), cell, results) == \
        "1 s (a per-second series)"
    assert figure_resolution(_metric("latency", "paced"), cell, results) is None


def test_the_live_view_labels_an_action_as_the_language_writes_it() -> None:
    """``stop replication db2`` was shown as ``stop db2`` (a server stopped?)."""
    from dsl.actions import label

    assert [label(parse_action(t, SOURCE, "x.exp")) for t in (
        "stop replication db2", "network partition db3 on replication", "disk full db1",
        "kill db2", "set global max_connections = 10 on db1", "drop caches",
    )] == ["stop replication db2", "network partition db3", "disk full db1", "kill db2",
           "set global max_connections = 10", "drop caches"]


def test_the_live_view_labels_waits_in_the_language_s_words() -> None:
    """`lab run` showed `after fill: sleep` and `after fill: wait r1`."""
    from dsl.actions import label
    from dsl.models import NodeRef, Sleep, WaitUntil

    assert label(Sleep(seconds=1.0)) == "wait 1s"
    assert label(WaitUntil(node=NodeRef(name="r1"), condition="caught_up", timeout=30.0)) \
        == "wait until r1 caught_up timeout 30s"
