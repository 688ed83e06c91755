"""What a run and its cells come to (statuses, exit codes: ``lab.exits``) and the progress
view's interface."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dsl.plan import Cell, Plan
from lab.exits import EXIT_INCOMPLETE
from lab.judge.checkers import CheckResult
from lab.judge.claims import ClaimOutcome, Side
from lab.judge.expectations import ExpectationOutcome


class View:
    """Progress of a run; this base shows nothing. lab.run.live.LiveView draws it."""

    def phase(self, text: str) -> None: ...
    def cell_started(self, plan: Plan, cell: Cell) -> None: ...
    def tick(
        self,
        elapsed: float,
        duration: float,
        stats: dict[str, dict[str, float]],
        done: list[str],
        upcoming: str | None,
    ) -> None: ...
    def cell_finished(self, outcome: CellOutcome) -> None: ...


@dataclass
class CellOutcome:
    cell: Cell
    status: str = "running"  # passed, failed, error, interrupted
    results: dict[str, CheckResult] = field(default_factory=dict)
    expectations: list[ExpectationOutcome] = field(default_factory=list)
    error: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    operations: int = 0
    healed: list[str] = field(default_factory=list)
    # when the end-of-run heal ran, seconds since the load started: {"at", "end"} (None: no
    # heal ran, ``leave faults`` or the cell stopped before it)
    heal: dict[str, float] | None = None
    reports: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the reader must know (not settled)
    faults: list[dict[str, Any]] = field(default_factory=list)  # lab.run.summary.fault_timeline
    store_error: str | None = None  # the results database failed: which, why, where data went
    claim_sides: dict[str, Side] = field(default_factory=dict)  # lab.judge.claims.measure_sides


@dataclass
class RunOutcome:
    run_id: str
    plan: Plan
    cells: list[CellOutcome] = field(default_factory=list)
    status: str = "running"
    exit_code: int = EXIT_INCOMPLETE
    message: str | None = None
    store_error: str | None = None  # one line: the database, the cause, where things went
    # claims across cells (lab.judge.claims)
    claims: list[ClaimOutcome] = field(default_factory=list)


def conclude(outcome: RunOutcome) -> RunOutcome:
    """The run's claims across cells, status, exit code and message from its cells: one
    decision for ``lab run`` and the pytest plugin."""
    from lab.exits import EXIT_EXPECTATION, EXIT_INCOMPLETE, EXIT_OK
    from lab.judge.claims import CellSides, claims_passed, judge_claims

    outcome.claims = judge_claims(outcome.plan, [CellSides(c.cell, c.claim_sides)
                                                 for c in outcome.cells])
    statuses = [c.status for c in outcome.cells]
    short = [c.cell.index for c in outcome.cells if c.status in ("interrupted", "error")]
    if short or outcome.status == "interrupted":  # a run cut short judges no claim either
        where = f"cell {short[0]} was cut short" if short else "the run was interrupted"
        for claim in outcome.claims:
            if claim.passed is not None:
                claim.explanation = f"not judged: {where}; {claim.explanation}"
                claim.passed = None
    outcome.store_error = next((c.store_error for c in outcome.cells if c.store_error), None)
    if outcome.status == "interrupted" or "interrupted" in statuses:
        outcome.status, outcome.exit_code = "interrupted", EXIT_INCOMPLETE
    elif outcome.store_error:
        outcome.status, outcome.exit_code = "error", EXIT_INCOMPLETE
    elif "error" in statuses:
        outcome.status, outcome.exit_code = "error", EXIT_INCOMPLETE
        outcome.message = next(c.error for c in outcome.cells if c.status == "error")
    elif "failed" in statuses or not claims_passed(outcome.claims):
        outcome.status, outcome.exit_code = "failed", EXIT_EXPECTATION
    else:
        outcome.status, outcome.exit_code = "passed", EXIT_OK
    if outcome.store_error:
        outcome.message = outcome.store_error
    return outcome
