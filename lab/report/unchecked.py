"""Figures of a cell that was never checked: its run was abandoned (``kill -9`` of ``lab run``,
the machine stopped) while the cell ran, so it stored operations and samples but no
measurements. ``lab show`` runs the checkers on what it stored, as ``lab report --html`` reads
the same operations (``lab.report.data``), instead of printing an empty matrix.

Workload kinds come from the run's ``.exp`` file when it is still there and names the same
workloads, else are guessed from the operations (``report_data.guess_kinds``). The
expectations of that file are measured and not judged (unknown, with the reason): a cell cut
short decides nothing (docs/results.md, "Abandoned runs").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from dsl.plan import Cell, Plan
from lab.judge.checkers import CheckContext, WorkloadInfo, run_checkers
from lab.judge.expectations import evaluate_all, not_judged
from lab.report.data import guess_kinds
from lab.store.db import Store

log = logging.getLogger(__name__)

ABANDONED = "the run was abandoned while this cell ran (its lab process is gone)"


def fill_unchecked(store: Store, summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` (``Store.summary``) with the figures of each cell that stored operations and
    no measurements computed now from the database; other cells are left as they are."""
    cells = summary.get("cells")
    if not isinstance(cells, list):
        return summary
    todo = [c for c in cells if isinstance(c, dict) and c.get("operations")
            and not c.get("measurements") and isinstance(c.get("index"), int)]  # fmt: skip
    if not todo:
        return summary
    rid = str(summary["run_id"])
    rows = {int(r["idx"]): r for r in store.cells(rid)}
    plan = _plan(summary.get("source"))
    for c in todo:
        _fill(store, rid, c, rows.get(int(c["index"]), {}), plan)
    return summary


def _plan(source: Any) -> Plan | None:
    if not isinstance(source, str) or not source:
        return None
    try:
        from dsl.api import check_file, load_plan

        return None if check_file(source) else load_plan(source)
    except Exception as e:  # noqa: BLE001 - the file moved or changed: guess the kinds
        log.debug("the run's file %s cannot give the workloads: %s", source, e)
        return None


def _fill(store: Store, rid: str, c: dict[str, Any], row: Mapping[str, Any],
          plan: Plan | None) -> None:
    idx = int(c["index"])
    history = store.operations(rid, idx)
    guessed = guess_kinds(history)
    cell = _plan_cell(plan, idx, set(guessed))
    if cell is not None:
        infos = {w.name: WorkloadInfo(w.kind, tuple(w.targets), tuple(w.reads), w.key_count)
                 for w in cell.workloads}  # fmt: skip
    else:
        infos = {w: WorkloadInfo(k) for w, k in guessed.items()}
    ctx = CheckContext(workloads=infos, load_start=row.get("load_start_ns"),
                       load_end=row.get("load_end_ns"), samples=store.samples(rid, idx))
    results = run_checkers(history, ctx)
    c["measurements"] = {name: r.metrics for name, r in results.items()}
    c["workloads"] = {w: i.kind for w, i in infos.items()}
    if cell is not None and plan is not None and not c.get("expectations"):
        judged = evaluate_all(plan.expectations, results, ctx, history, variant=cell.variant)
        c["expectations"] = [e.to_json() for e in not_judged(judged, ABANDONED)]
    c["notes"] = [*(c.get("notes") or []),
                  f"measured by lab show from the {c['operations']} operations the cell stored: "
                  "its run ended before it checked them; its expectations are not judged"]


def _plan_cell(plan: Plan | None, idx: int, workloads: set[str]) -> Cell | None:
    """The plan's cell ``idx`` when it has the workloads the operations name."""
    if plan is None or not 1 <= idx <= len(plan.cells):
        return None
    cell = plan.cells[idx - 1]
    return cell if workloads <= {w.name for w in cell.workloads} else None
