"""Issue 11, language part: router.writer as a target, faults that last (``for 2s``) or stay
(``for good``), ``between``, ``in VARIANT``, claims across cells, errors that no longer
mislead, and actions that need root. Each test fails on the code before it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fakes import FakeTopology, nemesis, ref
from histories import ctx, history, op

from dsl.actions import needs_root, resolved_action, undo
from dsl.api import check_text, parse_text, plan_text
from dsl.compile_warnings import plan_warnings, root_notes
from dsl.models import NetworkFault, NodeAction, TimedAction
from lab.cli.lang import schedule_rows
from lab.judge.checkers import lost_writes
from lab.judge.claims import CellSides, Side, claims_passed, judge_claims
from lab.judge.expectations import applies_in_cell, within
from lab.run.load import undo_of
from runners.components import NeedsRoot
from runners.topology import check_privileges

HEAD = """experiment "t" {
  duration 40s
  topology replication { primary db1  replicas db2, db3 }
  router haproxy { writer db1  readers db2, db3 }
  workload w: probe { target router.writer }
"""


def exp(*lines: str, head: str = HEAD) -> str:
    return head + "".join(f"  {line}\n" for line in lines) + "}\n"


def messages(text: str) -> list[str]:
    return [e.message for e in check_text(text, "t.exp")]


# --- router.writer ---------------------------------------------------------------------------


@pytest.mark.parametrize("action", [
    "kill router.writer", "pause router.writer", "stop router.writer", "restart router.writer",
    "cold restart router.writer", "network link_down router.writer on clients",
    "network latency router.writer 50ms", "network partition router.writer",
])
def test_router_writer_is_a_target_of_faults(action: str) -> None:
    e = parse_text(exp(f"at 10s {action}"))
    assert e.timeline[0].action.node.name == "router.writer"


def test_router_writer_needs_a_router_and_a_fault() -> None:
    no_router = 'experiment "t" {\n  topology replication { primary db1  replicas db2 }\n' \
                '  workload w: probe { target db1 }\n'
    assert messages(exp("at 1s kill router.writer", head=no_router)) == [
        "'router.writer' needs a router: it is the node the router sends writes to when the "
        "action fires"]
    assert messages(exp("at 1s resume router.writer")) == [
        "'resume router.writer' cannot address router.writer"]
    assert messages(exp("at 1s kill router.reader")) == [
        "'router.reader' spreads over several nodes; only router.writer names one node when "
        "the action fires"]


class _Router:
    def __init__(self, up: list[str]) -> None:
        self.up = up

    def up_servers(self, backend: str) -> list[str]:
        assert backend == "writer"
        return list(self.up)


def test_router_writer_resolves_when_it_fires_and_the_history_names_the_node(
        tmp_path: Path) -> None:
    topo = FakeTopology(tmp_path)
    topo.router = _Router(["db2", "db1"])  # type: ignore[assignment]
    nem, hist = nemesis(topo)
    seen: list[str] = []
    detail = nem.apply(NodeAction(verb="kill", node=ref("router.writer")),
                       before=lambda a: seen.append(a.node.name))  # type: ignore[union-attr]
    assert topo.log == ["kill db2"] and seen == ["db2"]
    assert [(o.type, o.f, o.node) for o in hist] == [("invoke", "kill", "db2"),
                                                      ("ok", "kill", "db2")]
    assert hist[-1].value["target"] == "router.writer" and hist[-1].value["resolved"] == "db2"
    assert detail["resolved"] == "db2"


def test_router_writer_with_no_writer_fails_in_the_history(tmp_path: Path) -> None:
    topo = FakeTopology(tmp_path)
    topo.router = _Router([])  # type: ignore[assignment]
    nem, hist = nemesis(topo)
    with pytest.raises(Exception, match="sends writes to no node"):
        nem.apply(NodeAction(verb="kill", node=ref("router.writer")))
    assert [o.type for o in hist] == ["invoke", "fail"] and topo.log == []


# --- for 2s, for good ------------------------------------------------------------------------


def test_a_fault_for_a_duration() -> None:
    e = parse_text(exp("at 10s network link_down db2 for 2s"))
    assert e.timeline[0].lasts == 2.0
    assert undo(e.timeline[0].action) == NetworkFault(verb="heal", node=e.timeline[0].action.node,  # type: ignore[union-attr]
                                                      link="all", span=e.timeline[0].action.span)


@pytest.mark.parametrize("line,message", [
    ("at 10s promote db2 for 2s",
     "'promote db2' has nothing that undoes it, so it takes no 'for'"),
    ("at 39s kill db2 for 2s",
     "the fault at 39s would be undone at 41s, after the end of the load (duration 40s)"),
    ("at 10s kill db2 for 2",
     "'for' needs a duration, but '2' is a plain number"),
])
def test_for_is_refused_where_it_makes_no_sense(line: str, message: str) -> None:
    assert messages(exp(line)) == [message]


def test_for_a_duration_in_a_step_is_refused_but_for_good_is_not() -> None:
    assert messages(exp("before load { stop db2 for 2s }")) == [
        "in a step, 'for' takes only 'good', not '2s'"]
    e = parse_text(exp("after w { stop db2 for good }", head=HEAD.replace(
        "target router.writer", "target router.writer  duration 10s")))
    assert e.steps[0].actions[0].left is True  # type: ignore[union-attr]


def test_the_plan_shows_both_ends_of_a_fault_that_lasts() -> None:
    plan = plan_text(exp("at 10s kill router.writer for 2s", "at 20s pause db3 for good"))
    assert schedule_rows(plan) == [
        ("at 10s", "kill router.writer for 2s"),
        ("at 12s", "start router.writer (ends the fault of 10s: 2s after it took effect)"),
        ("at 20s", "pause db3 for good (never undone)"),
    ]


def test_the_undo_is_timed_from_the_real_start_and_aims_at_the_resolved_node() -> None:
    ta = TimedAction(at=10.0, lasts=2.0,
                     action=NodeAction(verb="kill", node=ref("router.writer")))
    back = undo_of(ta, 10.4, {"resolved": "db2"})
    assert back is not None and back.at == pytest.approx(12.4)
    assert back.action == NodeAction(verb="start", node=ref("db2"))
    assert undo_of(ta.model_copy(update={"lasts": None}), 10.4, None) is None
    assert resolved_action(ta.action, None) == ta.action


def test_a_fault_left_for_good_is_not_healed(tmp_path: Path) -> None:
    topo = FakeTopology(tmp_path)
    nem, _ = nemesis(topo)
    nem.apply(NodeAction(verb="kill", node=ref("db1"), left=True))
    nem.apply(NodeAction(verb="pause", node=ref("db3"), left=True))
    nem.apply(NodeAction(verb="stop", node=ref("db2")))
    topo.log.clear()
    healed = nem.heal_all()
    assert healed == ["start db2"] and topo.log == ["start db2"]
    assert nem.left_paused() == {"db3"}
    # db1 is still known to be down: waits and reads skip it (the relay-log lesson's
    # `wait until r1 caught_up` with the primary gone for good must not connect to it)
    assert nem.down == {"db1"}


# --- lost writes when the writer is gone for good --------------------------------------------


def _w(p: int, t: float, key: int, value: str) -> list[Any]:
    return op(p, "write", t, t + 0.1, "ok", key=key, value=value, workload="uw")  # type: ignore[arg-type]


def test_lost_writes_are_judged_on_the_survivors_when_the_writer_is_down() -> None:
    h = history(_w(1, 0, 1, "a"), _w(1, 1, 2, "b"), _w(1, 2, 3, "c"))
    final = {"uw": {"db2": {1: "a"}, "db3": {1: "a", 2: "b"}}}
    r = lost_writes.check(h, ctx(0, 10, final_state=final,
                                 facts={"survivors": ["db2", "db3"]}))
    assert r.metrics["count"] == 1 and r.metrics["unchecked"] == 0  # only key 3 is nowhere
    assert r.valid is False


def test_lost_writes_with_no_survivor_are_unknown_not_zero() -> None:
    h = history(_w(1, 0, 1, "a"))
    r = lost_writes.check(h, ctx(0, 10, final_state={"uw": {}}, facts={"survivors": []}))
    assert r.valid is None and r.metrics["count"] == 0


# --- between, in VARIANT, claims across cells ------------------------------------------------


def test_between() -> None:
    e = parse_text(exp("expect downtime(w) between 1.9s and 2.2s"))
    x = e.expectations[0]
    assert (x.op, x.value.value, x.high.value) == ("between", 1.9, 2.2)  # type: ignore[union-attr]
    assert within(2.0, 1.9, 2.2) is True and within(2.3, 1.9, 2.2) is False
    assert within(1.8, 1.9, 2.2) is False and within(1.8, 1.9, 2.2, lower_bound=True) is None
    assert messages(exp("expect downtime(w) between 2s and 1s")) == [
        "'between 2s and 1s': the low end comes first"]


VARIANTS = HEAD + "  variant a { sync_binlog = 0 }\n  variant b { sync_binlog = 1 }\n"


def test_an_expectation_in_a_variant_applies_only_there() -> None:
    e = parse_text(exp("expect downtime(w) < 2s in a", head=VARIANTS))
    x = e.expectations[0]
    assert x.variant == "a" and applies_in_cell(x, "a") and not applies_in_cell(x, "b")
    assert messages(exp("expect downtime(w) < 2s in c", head=VARIANTS)) == [
        "unknown variant 'c' (known: a, b)"]


def test_a_claim_across_cells_is_parsed_and_not_judged_in_a_cell() -> None:
    e = parse_text(exp("expect throughput(w) in a >= 1.3 * throughput(w) in b", head=VARIANTS))
    x = e.expectations[0]
    assert x.across_cells and (x.variant, x.other_variant, x.value.value) == ("a", "b", 1.3)
    assert not applies_in_cell(x, "a")
    assert parse_text(exp("expect throughput(w) in a >= 1.3x throughput(w) in b",
                          head=VARIANTS)).expectations[0].value.value == 1.3
    assert messages(exp("expect throughput(w) in a >= latency(w) in b", head=VARIANTS)) == [
        "the two sides of this claim measure different things: a rate and a duration"]


def _cell(index: int, variant: str, sweep: dict[str, str] | None = None) -> Any:
    return SimpleNamespace(index=index, variant=variant, sweep=sweep or {})


def _plan(text: str, cells: list[Any]) -> Any:
    """The file's expectations with a matrix of hand-made cells."""
    return SimpleNamespace(expectations=plan_text(text).expectations, cells=cells)


def test_claims_are_judged_on_the_means_with_both_figures_and_the_ratio() -> None:
    text = exp("repeat 2", "expect throughput(w) in a >= 1.3 * throughput(w) in b", head=VARIANTS)
    cells = [_cell(1, "a"), _cell(2, "a"), _cell(3, "b"), _cell(4, "b")]
    plan = _plan(text, cells)

    def sides(values: list[float]) -> list[CellSides]:
        keys = ["0:left", "0:left", "0:right", "0:right"]
        return [CellSides(c, {k: Side(v, "rate")})
                for c, k, v in zip(cells, keys, values, strict=True)]

    held = judge_claims(plan, sides([140, 120, 100, 100]))
    assert [(c.passed, c.left, c.right, c.ratio) for c in held] == [(True, 130, 100, 1.3)]
    assert "ratio 1.3" in held[0].explanation
    failed = judge_claims(plan, sides([120, 120, 100, 100]))
    assert failed[0].passed is False and not claims_passed(failed)
    unknown = judge_claims(plan, [CellSides(cells[0], {"0:left": Side(None, None, why="x")}),
                                  CellSides(cells[2], {"0:right": Side(1.0, "rate")})])
    assert unknown[0].passed is None and "could not be measured: x" in unknown[0].explanation


def test_claims_with_a_sweep_are_judged_per_combination() -> None:
    text = exp("expect throughput(w) in a > throughput(w) in b", head=VARIANTS)
    cells = [_cell(1, "a", {"t": "1"}), _cell(2, "a", {"t": "4"}),
             _cell(3, "b", {"t": "1"}), _cell(4, "b", {"t": "4"})]
    plan = _plan(text, cells)
    got = judge_claims(plan, [CellSides(cells[0], {"0:left": Side(5.0, "rate")}),
                              CellSides(cells[1], {"0:left": Side(1.0, "rate")}),
                              CellSides(cells[2], {"0:right": Side(2.0, "rate")}),
                              CellSides(cells[3], {"0:right": Side(2.0, "rate")})])
    assert [(c.group, c.passed) for c in got] == [({"t": "1"}, True), ({"t": "4"}, False)]


# --- errors that misled ----------------------------------------------------------------------


def _one(body: str) -> tuple[str, str | None]:
    errors = check_text('experiment "x" {\n  ' + body + "\n}\n", "x.exp")
    assert len(errors) == 1, errors
    return errors[0].message, errors[0].hint


def test_a_misspelt_keyword_after_a_name_is_not_a_missing_comma() -> None:
    assert _one("workload w: probe { target db1  evrey 10ms }") == (
        "unknown keyword 'evrey'", "did you mean 'every'?")


def test_a_word_after_a_number_is_not_a_unit() -> None:
    message, hint = _one("duration 10 parsecs")
    assert message == "'parsecs' is not a unit; a unit is written right after its number"
    assert hint is not None and "e.g. 10s" in hint


def test_an_unknown_metric_lists_every_metric() -> None:
    message, hint = _one("expect downtme(w) < 1s")
    assert message.startswith("unknown metric 'downtme' (known: ")
    from dsl.metrics import METRICS
    assert "..." not in message and all(name in message for name in METRICS)
    assert hint == "did you mean 'downtime'?"


def test_delay_refuses_fractions_of_a_second() -> None:
    assert _one("topology replication { primary db1  replicas db2\n  delay db2 by 1500ms }") == (
        "'delay' is whole seconds (MASTER_DELAY), not 1500ms", "write 1s or 2s")


# --- root ------------------------------------------------------------------------------------


def test_needs_root_reasons_come_from_the_action_table() -> None:
    e = parse_text(exp("at 1s drop caches", "at 2s drop caches on db2", "at 3s disk full db2",
                       "at 4s disk free db2"))
    reasons = [needs_root(t.action, "replication") for t in e.timeline]
    assert reasons == ["writing /proc/sys/vm/drop_caches", None,
                       "mounting a tmpfs of its own for db2's data directory when the topology "
                       "starts", None]
    part = NetworkFault(verb="partition", node=ref("g1"))
    assert needs_root(part, "galera") is not None and needs_root(part, "replication") is None
    assert needs_root(NetworkFault(verb="latency", node=ref("g1"), link="group", latency=0.1),
                      "galera") is not None


def test_root_notes_and_the_runtime_refusal_say_the_same() -> None:
    plan = plan_text(exp("at 12s drop caches"), "t.exp")
    notes = root_notes(plan, "t.exp")
    assert [(n.severity, n.span.line, n.message) for n in notes] == [
        ("note", 6, "`drop caches (whole OS)` needs root: writing "
                    "/proc/sys/vm/drop_caches")]
    with pytest.raises(NeedsRoot, match=r"line 6: `drop caches \(whole OS\)` needs root: "
                                         r"writing /proc/sys/vm/drop_caches"):
        check_privileges(plan, is_root=False)
    check_privileges(plan, is_root=True)
    check_privileges(plan_text(exp("at 12s drop caches on db2")), is_root=False)


def test_lab_check_prints_root_notes_without_changing_the_exit_status(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lab.cli import lang as cli_lang

    f = tmp_path / "t.exp"
    f.write_text(exp("at 12s drop caches"))
    monkeypatch.setattr(cli_lang, "is_root", lambda: False)
    assert cli_lang.cmd_check([str(f)]) == 0
    err = capsys.readouterr().err
    assert f"{f}:6:10: note: `drop caches (whole OS)` needs root: writing " in err
    assert "line 6" not in err  # the location prefix says it once
    monkeypatch.setattr(cli_lang, "is_root", lambda: True)
    assert cli_lang.cmd_check([str(f)]) == 0
    assert "needs root" not in capsys.readouterr().err


def test_a_promote_of_a_node_the_router_does_not_list_is_warned_about() -> None:
    plan = plan_text(exp("at 10s kill db1", "at 12s promote db2"))
    assert [w.message.split(":")[0] for w in plan_warnings(plan)] == [
        "'db2' is not in the router's writers (db1)"]


def test_units_of_between_must_agree() -> None:
    assert messages(exp("expect downtime(w) between 1s and 5%")) == [
        "both ends of 'between' need the same kind of number: '1s' is a duration, '5%' a "
        "percent"]


def test_the_plan_lists_the_toxiproxy_links_and_the_servers_command_line() -> None:
    from io import StringIO

    from rich.console import Console

    from lab.cli.lang import links_rows, render_plan

    plan = plan_text(exp("at 5s network link_down db2 for 2s"))
    rows = links_rows(plan)
    assert ("db2.clients", "23022", "db2 (23002)",
            "clients that name the node, and the router") in rows
    assert ("db2.replication", "23032", "db1 (23001)",
            "db2's replication from db1 (follows a promote)") in rows
    assert links_rows(plan_text(exp("at 5s kill db2"))) == []
    pp = plan_text('experiment "p" {\n  topology primary_primary { nodes p1, p2 }\n'
                   '  workload w: probe { target p1 }\n}\n')
    out = StringIO()
    render_plan(pp, Console(file=out, width=200))
    assert "--skip-slave-start" in out.getvalue() and "innodb_flush_method" in out.getvalue()
