"""The catalogue in experiments/: every file checks, plans, and together they use every
construct of the language."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lark import Tree

from dsl.api import check_file, format_errors, load_experiment, load_plan
from dsl.models import NodeAction, WaitUntil
from dsl.parser import get_parser, grammar_keywords

EXPERIMENTS = sorted((Path(__file__).resolve().parents[2] / "experiments").glob("*.exp"))


def test_the_catalogue_is_found() -> None:
    """The parametrized checks below are not vacuous: the catalogue's first experiment (the
    one ``make demo`` runs) is among them."""
    assert "quickstart.exp" in {p.name for p in EXPERIMENTS}


@pytest.mark.parametrize("path", EXPERIMENTS, ids=[p.name for p in EXPERIMENTS])
def test_experiment_checks_and_plans(path: Path) -> None:
    errors = check_file(path)
    assert errors == [], format_errors(errors)
    plan = load_plan(path)
    assert plan.cells and all(c.nodes for c in plan.cells)


def _code(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)
    return re.sub(r"#[^\n]*", "", text)


def test_together_they_use_every_rule_and_keyword() -> None:
    parser = get_parser()
    used_rules: set[str] = set()
    words: set[str] = set()
    for path in EXPERIMENTS:
        tree = parser.parse(path.read_text(encoding="utf-8"))
        used_rules |= {str(t.data) for t in tree.iter_subtrees() if isinstance(t, Tree)}
        words |= set(re.findall(r"[A-Za-z_]+", _code(path)))
    rules = {str(r.origin.name) for r in parser.rules}
    public = {r for r in rules if not r.startswith("_")}
    assert sorted(public - used_rules) == []
    assert sorted(grammar_keywords() - words) == []


def test_quickstart_is_the_tour_the_readme_promises() -> None:
    exp = load_experiment(EXPERIMENTS[[p.name for p in EXPERIMENTS].index("quickstart.exp")])
    assert exp.topology.kind == "replication"
    assert exp.topology.primary.name == "db1"  # type: ignore[union-attr]
    assert [r.name for r in exp.topology.replicas] == ["db2", "db3"]  # type: ignore[union-attr]
    assert exp.router is not None and exp.router.kind == "haproxy"
    kinds = {w.name: w for w in exp.workloads}
    assert kinds["writes"].kind == "probe"
    assert [e.name for e in kinds["writes"].targets] == ["router.writer"]
    assert kinds["ryw"].kind == "read_your_writes"
    assert [e.name for e in kinds["ryw"].reads] == ["db2", "db3"]
    timeline = [(t.at, t.action) for t in exp.timeline]
    assert isinstance(timeline[0][1], NodeAction) and timeline[0][1].verb == "kill"
    assert timeline[0][0] == 10.0 and timeline[0][1].node.name == "db2"
    assert isinstance(timeline[1][1], NodeAction) and timeline[1][1].verb == "start"
    assert timeline[1][0] == 20.0
    assert isinstance(timeline[2][1], WaitUntil) and timeline[2][1].condition == "caught_up"
    assert 25 <= exp.duration <= 40
    metrics = {e.metric.name for e in exp.expectations}
    assert {"downtime", "stale_reads", "lost_writes"} <= metrics
