"""What a run and its cells come to (statuses, exit codes: ``lab.exits``) and the progress
view's interface."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dsl.plan import Cell, Plan
from lab.checkers import CheckResult
from lab.claims import ClaimOutcome, Side
from lab.exits import EXIT_INCOMPLETE
from lab.expectations import ExpectationOutcome


class View:
    """Progress of a run; this base shows nothing. lab.live.LiveView draws it."""

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
    reports: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the reader must know (not settled)
    faults: list[dict[str, Any]] = field(default_factory=list)  # lab.summary.fault_timeline
    store_error: str | None = None  # the results database failed: which, why, where data went
    claim_sides: dict[str, Side] = field(default_factory=dict)  # lab.claims.measure_sides


@dataclass
class RunOutcome:
    run_id: str
    plan: Plan
    cells: list[CellOutcome] = field(default_factory=list)
    status: str = "running"
    exit_code: int = EXIT_INCOMPLETE
    message: str | None = None
    store_error: str | None = None  # one line: the database, the cause, where things went
    claims: list[ClaimOutcome] = field(default_factory=list)  # claims across cells (lab.claims)
