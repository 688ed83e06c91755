"""divergence: rows that differ between nodes after settling, per table and per node.

The engine compares the tables (``lab.run.cell_facts.read_divergence``, ``runners.divergence``:
chunk checksums in primary-key order, then row by row inside the chunks that differ) and
leaves ``ctx.facts["divergence"] = {"reference": node, "tables": {"lab.w_x": {"rows",
"missing", "extra", "different", "chunks", "chunks_total", "error", "nodes": {node: {...}}}},
"workloads": {workload: [tables]}}``.

Subjects: each workload (``rows``: distinct primary keys of its tables that differ on at least
one node; ``missing``/``extra``/``different``: summed over the nodes), ``W on NODE`` (that node
against the reference) and each table (``lab.w_x``). Over everything: ``rows`` (every table,
also tables no workload owns), ``tables`` (the tables that differ). A figure is None (unknown)
when a node or the table could not be read, never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lab.history import Op
from lab.judge.checkers.base import CheckContext, CheckResult

NAME = "divergence"
STATS = ("rows", "missing", "extra", "different", "chunks")


def _add(into: dict[str, Any], part: dict[str, Any]) -> None:
    for k in STATS:
        v = part.get(k)
        if into.get(k, 0) is None or v is None or isinstance(v, bool):
            into[k] = None
        else:
            into[k] = into.get(k, 0) + v


def check(history: Sequence[Op], ctx: CheckContext) -> CheckResult:
    fact = ctx.facts.get("divergence")
    if not isinstance(fact, dict) or not isinstance(fact.get("tables"), dict) or (
            fact.get("error") and not fact.get("tables")):
        why = str(fact.get("error")) if isinstance(fact, dict) and fact.get("error") \
            else "the nodes' rows were not compared"
        return CheckResult(NAME, None, {"rows": None, "why": why, "subjects": {}}, why)
    tables: dict[str, dict[str, Any]] = fact["tables"]
    subjects: dict[str, dict[str, Any]] = {}
    for name, t in tables.items():
        subjects[name] = {k: t.get(k) for k in (*STATS, "chunks_total", "error")}
    owned: set[str] = set()
    for w, names in (fact.get("workloads") or {}).items():
        agg: dict[str, Any] = {}
        per_node: dict[str, dict[str, Any]] = {}
        for tn in names:
            owned.add(tn)
            table = tables.get(tn)
            if table is None:
                _add(agg, dict.fromkeys(STATS))
                continue
            _add(agg, table)
            for node, nd in (table.get("nodes") or {}).items():
                _add(per_node.setdefault(node, {}), nd if isinstance(nd, dict)
                     else dict.fromkeys(STATS))
        subjects[w] = agg
        for node, m in per_node.items():
            subjects[f"{w} on {node}"] = m
    rows: int | None = 0
    differing: list[str] = []
    for name, t in tables.items():
        r = t.get("rows")
        if r is None:
            rows = None
        elif rows is not None:
            rows += int(r)
        if r:
            differing.append(name)
    metrics: dict[str, Any] = {"rows": rows, "tables": differing,
                               "reference": fact.get("reference"),
                               "unowned": sorted(set(tables) - owned), "subjects": subjects}
    if rows is None:
        bad = [n for n, t in tables.items() if t.get("rows") is None]
        return CheckResult(NAME, None if not differing else False, metrics,
                           "not compared: " + ", ".join(
                               f"{n} ({tables[n].get('error') or tables[n].get('errors')})"
                               for n in bad))
    notes = [f"{n}: {tables[n]['rows']} rows differ from {fact.get('reference')}"
             for n in differing]
    return CheckResult(NAME, rows == 0, metrics, "; ".join(notes))
