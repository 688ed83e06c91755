"""Why a cell did not pass, as plain text: what the pytest plugin shows for a failed item.

``cell_failure_text(plan, outcome, path)`` lists every expectation that did not hold, each
with the ``path:line:col`` of its ``expect`` line, the line as written, the verdict exactly
as ``lab run`` prints it (``FAIL downtime(writes).max = 2.03 s (1 outage window); expected <
1s: fails``) and the figure's resolution (``lab.judge.resolution``); then the cell's notes, and the
error when the cell could not complete (its message includes the tail of the component's log).
No colours, no Python traceback.
"""

from __future__ import annotations

from dsl.models import Expectation
from dsl.plan import Plan
from lab.judge.expectations import ExpectationOutcome
from lab.judge.resolution import figure_resolution
from lab.report.summary_matrix import transaction_findings
from lab.run.outcome import CellOutcome

INDENT = "    "
MARKS = {True: "PASS", False: "FAIL", None: "UNKNOWN"}


def _source(plan: Plan, out: ExpectationOutcome, used: set[int]) -> Expectation | None:
    """The ``expect`` line an outcome comes from (by its text, in file order)."""
    for i, e in enumerate(plan.expectations):
        if i not in used and e.text == out.text:
            used.add(i)
            return e
    return None


def expectation_lines(plan: Plan, outcome: CellOutcome, path: str) -> list[str]:
    """Every expectation of the cell that did not hold, a few lines each."""
    lines: list[str] = []
    used: set[int] = set()
    for eo in outcome.expectations:
        e = _source(plan, eo, used)
        if eo.passed is True:
            continue
        where = path
        if e is not None and e.span.line > 0:
            where = f"{path}:{e.span.line}:{e.span.column}"
        lines.append(f"{where}: expect {eo.text.removeprefix('expect').strip()}")
        lines.append(f"{INDENT}{MARKS[eo.passed]} {eo.explanation}")
        if e is not None and eo.measured is not None:
            res = figure_resolution(e.metric, outcome.cell, outcome.results, e.value.kind)
            if res:
                lines.append(f"{INDENT}resolution: {res}")
    return lines


def cell_failure_text(plan: Plan, outcome: CellOutcome, path: str, run_id: str | None = None,
                      kept: bool = False, db: str | None = None) -> str:
    """The whole text of a cell that did not pass."""
    cell = outcome.cell
    where = f"cell {cell.index} ({cell.label})" if len(plan.cells) > 1 else plan.name
    failed = [e for e in outcome.expectations if e.passed is not True]
    if outcome.status == "error":
        head = f"{where} could not complete"
    elif outcome.status == "interrupted":
        head = f"{where} was interrupted"
    else:
        head = (f"{where}: {len(failed)} of {len(outcome.expectations)} expectation"
                f"{'s' if len(outcome.expectations) != 1 else ''} did not hold")
    if run_id:
        head += f" (run {run_id})"
    lines = [head]
    lines += expectation_lines(plan, outcome, path)
    lines += transaction_findings(  # the transactions behind a finding
        {"measurements": {k: r.metrics for k, r in outcome.results.items()}})
    for note in outcome.notes:
        lines.append(f"note: {note}")
    if outcome.error:
        lines.append(f"error: {outcome.error}")
    if run_id:
        db_arg = f" --db {db}" if db else ""
        lines.append(f"details: lab show {run_id}{db_arg}")
        if kept:
            lines.append(f"the servers of this cell are kept up: `lab status` lists them; "
                         f"after this session, `lab down {run_id}` takes them down")
    return "\n".join(lines)
